import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App, Token, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { afterEach, describe, expect, it } from 'vitest';
import { VarveExampleStack } from '../../infra/example-stack.js';
import { addVarveNagChecks } from '../../infra/nag.js';
import { cdkJsonContext, resourcesOf } from './template.js';

interface Violation {
  ruleName: string;
  violatingConstructs: { constructPath: string }[];
}
interface NagReport {
  pluginReports: {
    pluginName: string;
    conclusion: string;
    violations: Violation[];
    suppressedViolations?: (Violation & { reason: string })[];
  }[];
}

const outdirs: string[] = [];
afterEach(() => {
  for (const d of outdirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The example app exactly as infra/app.ts wires it, with bundling skipped and a temp outdir. */
function exampleApp(context: Record<string, unknown> = {}) {
  const outdir = mkdtempSync(path.join(tmpdir(), 'varve-nag-'));
  outdirs.push(outdir);
  const app = new App({ outdir, context: { ...cdkJsonContext(), ...context, 'aws:cdk:bundling-stacks': [] } });
  const stack = new VarveExampleStack(app, 'VarveExample');
  addVarveNagChecks(app);
  return { app, stack, outdir };
}

/** Synthesises; returns the validation report whether synth passed or was stopped by a finding. */
function synthReport(app: App, outdir: string): { error?: unknown; report: NagReport } {
  let error: unknown;
  try {
    app.synth();
  } catch (e) {
    error = e;
  }
  return { error, report: JSON.parse(readFileSync(path.join(outdir, 'validation-report.json'), 'utf8')) as NagReport };
}

function unacknowledged(report: NagReport): string[] {
  return report.pluginReports.flatMap((p) =>
    p.violations.flatMap((v) => v.violatingConstructs.map((c) => `${v.ruleName} at ${c.constructPath}`)),
  );
}

describe('example app under cdk-nag AwsSolutionsChecks', () => {
  it.each(['queue', 'direct'])('has no unacknowledged finding in %s commit mode', (commitMode) => {
    // Prepare
    const { app, outdir } = exampleApp({ 'varve:commitMode': commitMode });
    // Act
    const { error, report } = synthReport(app, outdir);
    // Assess
    expect(unacknowledged(report)).toEqual([]);
    expect(error).toBeUndefined();
    const nag = report.pluginReports.find((p) => p.pluginName === 'AwsSolutions')!;
    expect(nag.conclusion).toBe('success');
    // every acknowledgment says why
    for (const s of nag.suppressedViolations ?? []) expect(s.reason.length).toBeGreaterThan(40);
  });

  it('still fails on a wildcard that varve did not write', () => {
    // Prepare: a user adds s3:* on the whole bucket to a varve function
    const { app, stack, outdir } = exampleApp();
    stack.orders.ingestFunction.addToRolePolicy(
      new PolicyStatement({ actions: ['s3:*'], resources: [stack.warehouse.bucket.arnForObjects('*')] }),
    );
    // Act
    const { error, report } = synthReport(app, outdir);
    // Assess
    expect(error).toBeDefined();
    expect(
      unacknowledged(report).some((v) => v.startsWith('AwsSolutions-IAM5') && v.includes('/Orders/IngestRole/')),
    ).toBe(true);
  });
});

describe('example stack', () => {
  it('is environment-agnostic: no account, no region, no context lookups', () => {
    const { app, stack } = exampleApp();
    expect(Token.isUnresolved(stack.account)).toBe(true);
    expect(Token.isUnresolved(stack.region)).toBe(true);
    expect(app.synth().manifest.missing ?? []).toEqual([]);
  });

  it('holds one warehouse, the table shop.orders with ingestion, and the orders-audit consumer', () => {
    // Prepare / Act
    const { stack } = exampleApp();
    const template = Template.fromStack(stack);
    // Assess
    template.resourceCountIs('AWS::S3::Bucket', 1);
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    const fns = Object.values(resourcesOf(template, 'AWS::Lambda::Function'))
      .map((f) => f.Properties.Environment?.Variables)
      .filter((env) => env?.VARVE_TABLE);
    expect(fns).toHaveLength(6); // ingest, commit, compact, expire, discover, read
    for (const env of fns) expect(env.VARVE_TABLE).toBe('shop.orders');
    expect(fns.filter((env) => env.VARVE_CONSUMER_ID === 'orders-audit')).toHaveLength(2);
    expect(stack.audit.consumerId).toBe('orders-audit');
    // the outputs docs/AWS.md uses
    expect(Object.keys(template.findOutputs('*')).sort()).toEqual([
      'AlarmTopicArn',
      'AuditLogGroup',
      'BucketName',
      'CatalogTable',
      'InboxPrefix',
      'IngestQueueUrl',
      'RejectsQueueUrl',
      'WarehouseUri',
    ]);
  });

  it('sends every alarm to its encrypted alarm topic, whose key CloudWatch may use', () => {
    // Prepare / Act
    const { stack } = exampleApp({ 'varve:alarmEmail': 'oncall@example.com' });
    const template = Template.fromStack(stack);
    // Assess
    const topicId = stack.resolve((stack.alarmTopic.node.defaultChild as CfnElement).logicalId) as string;
    const alarms = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm'));
    expect(alarms.length).toBe(stack.orders.alarms.alarms.length + stack.audit.alarms.alarms.length);
    for (const a of alarms) {
      expect(a.Properties.AlarmActions).toEqual([{ Ref: topicId }]);
      expect(a.Properties.OKActions).toEqual([{ Ref: topicId }]);
    }
    const [topic] = Object.values(resourcesOf(template, 'AWS::SNS::Topic'));
    expect(topic.Properties.KmsMasterKeyId).toBeDefined();
    const [key] = Object.values(resourcesOf(template, 'AWS::KMS::Key'));
    const cw = (key.Properties.KeyPolicy.Statement as { Principal?: { Service?: string }; Action: string[] }[]).find(
      (s) => s.Principal?.Service === 'cloudwatch.amazonaws.com',
    );
    expect(cw?.Action).toEqual(expect.arrayContaining(['kms:Decrypt', 'kms:GenerateDataKey*']));
    template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'oncall@example.com' });
  });

  it('rejects an unknown commit mode in context', () => {
    expect(() => exampleApp({ 'varve:commitMode': 'sometimes' })).toThrow(/varve:commitMode/);
  });
});
