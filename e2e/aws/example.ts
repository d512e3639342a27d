/**
 * The example stack's template, synthesised in-process with cdk.json's context (bundling skipped,
 * for the in-process audit tests), and the logical ids of its functions.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { CfnElement } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { VarveExampleStack } from '../../infra/example-stack.js';
import { PROJECT_ROOT } from '../../infra/lambda.js';
import type { CfnTemplate } from './template.js';

/** The logical ids of the example's functions, by role. */
export interface ExampleFunctions {
  ingest: string;
  commit: string;
  compact: string;
  expire: string;
  discover: string;
  read: string;
}

function logicalId(construct: IConstruct): string {
  return Stack.of(construct).resolve((construct.node.defaultChild as CfnElement).logicalId) as string;
}

/**
 * Synthesises the example stack (no bundling) and returns its template and function ids; `outdir`
 * is where the App synthesises (default: a new temp folder, as CDK does).
 */
export function synthExample(
  context: Record<string, unknown> = {},
  outdir?: string,
): { template: CfnTemplate; fns: ExampleFunctions } {
  const cdkJson = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as {
    context: Record<string, unknown>;
  };
  const app = new App({ outdir, context: { ...cdkJson.context, ...context, 'aws:cdk:bundling-stacks': [] } });
  const stack = new VarveExampleStack(app, 'VarveExample');
  const template = Template.fromStack(stack).toJSON() as CfnTemplate;
  const fns: ExampleFunctions = {
    ingest: logicalId(stack.orders.ingestFunction),
    commit: logicalId(stack.orders.commitFunction!),
    compact: logicalId(stack.orders.compactFunction),
    expire: logicalId(stack.orders.expireFunction),
    discover: logicalId(stack.audit.discoverFunction),
    read: logicalId(stack.audit.readFunction),
  };
  return { template, fns };
}
