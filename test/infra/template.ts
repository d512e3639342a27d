/**
 * Helpers for the CDK assertion tests: an App with cdk.json's context and bundling skipped, and
 * readers that pull functions, policies and event source mappings out of a synthesised template.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { App, Stack, type CfnElement } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { PROJECT_ROOT } from '../../infra/lambda.js';
import { cdkOutdir } from '../helpers/cdk-outdir.js';

/** The feature flags and varve context of cdk.json, so tests synthesise what `cdk synth` does. */
export function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as {
    context: Record<string, unknown>;
  };
  return cdkJson.context;
}

/** An App that skips esbuild (`aws:cdk:bundling-stacks: []`), with cdk.json's context under `extra`, synthesising into a temp folder removed after the run. */
function testApp(extra: Record<string, unknown> = {}): App {
  return new App({ outdir: cdkOutdir(), context: { ...cdkJsonContext(), ...extra, 'aws:cdk:bundling-stacks': [] } });
}

/** A bare stack in a fresh test App. */
export function testStack(): Stack {
  return new Stack(testApp(), 'Test');
}

/** The logical id of an L2 construct's CloudFormation resource. */
export function logicalId(construct: IConstruct): string {
  const stack = Stack.of(construct);
  return stack.resolve((construct.node.defaultChild as CfnElement).logicalId) as string;
}

/** A resource of the template by logical id. */
export interface Resource {
  Type: string;
  Properties: Record<string, any>;
  DeletionPolicy?: string;
}

/** Every resource of the given type, keyed by logical id. */
export function resourcesOf(template: Template, type: string): Record<string, Resource> {
  return template.findResources(type) as Record<string, Resource>;
}

/** One IAM policy statement as synthesised. */
export interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: Record<string, Record<string, unknown>>;
  Principal?: unknown;
  Sid?: string;
}

/** Actions of a statement as a list. */
export function actionsOf(s: Statement): string[] {
  return ([] as string[]).concat(s.Action);
}

/** Resources of a statement as a list. */
export function resourceList(s: Statement): unknown[] {
  return ([] as unknown[]).concat(s.Resource);
}

/** Every identity-policy statement in the template: AWS::IAM::Policy documents and role inline policies. */
export function allIdentityStatements(template: Template): Statement[] {
  const out: Statement[] = [];
  for (const p of Object.values(resourcesOf(template, 'AWS::IAM::Policy')))
    out.push(...p.Properties.PolicyDocument.Statement);
  for (const r of Object.values(resourcesOf(template, 'AWS::IAM::Role'))) {
    for (const p of r.Properties.Policies ?? []) out.push(...p.PolicyDocument.Statement);
  }
  return out;
}

/** Statements of the policies attached to a function's execution role. */
export function functionStatements(template: Template, fn: { role?: IConstruct }): Statement[] {
  const roleId = logicalId(fn.role!);
  return Object.values(resourcesOf(template, 'AWS::IAM::Policy'))
    .filter((p) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === roleId))
    .flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[]);
}

/** The statements of `stmts` that grant `action`. */
export function granting(stmts: Statement[], action: string): Statement[] {
  return stmts.filter((s) => s.Effect === 'Allow' && actionsOf(s).includes(action));
}

/** A resource written as `Fn::Join` of a bucket ARN and a literal suffix: returns the suffix. */
export function objectSuffix(resource: unknown): string | undefined {
  const join = (resource as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
  if (!join) return undefined;
  const [, parts] = join;
  return parts.length === 2 && typeof parts[1] === 'string' ? parts[1] : undefined;
}

/** An IAM resource pattern (`*` any run of characters, `?` one) as a RegExp over object keys. */
export function iamPattern(pattern: string): RegExp {
  const body = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`);
}

/** Environment variables of a function resource. */
export function envOf(template: Template, fn: IConstruct): Record<string, unknown> {
  const res = resourcesOf(template, 'AWS::Lambda::Function')[logicalId(fn)];
  return res.Properties.Environment.Variables as Record<string, unknown>;
}
