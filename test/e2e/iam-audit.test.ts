/**
 * The IAM audit over the example stack: the handlers run in-process on moto against a deployment
 * of the synthesised template (its queues, bucket, catalog and bus, under the template's own
 * settings), each with its template environment; every AWS call each one makes is evaluated by a
 * real IAM engine against that function's synthesised role policies and the bucket and queue
 * policies, S3's 404-needs-ListBucket rule included. Zero denials, and the audit catches a
 * missing grant.
 */
import { DeleteItemCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { beforeAll, describe, expect, it } from 'vitest';
import { synthExample, type ExampleFunctions } from '../../e2e/aws/example.js';
import { cdkOutdir } from '../helpers/cdk-outdir.js';
import { deployTemplate, type Deployment } from '../../e2e/aws/deploy.js';
import { functionsOf, type CfnTemplate, type PolicyDocument } from '../../e2e/aws/template.js';
import { formatDenials, IamAudit, type AuditReport } from '../../e2e/iam/audit.js';
import { onCall, withFunction } from '../../e2e/iam/recorder.js';
import { createCommitHandler } from '../../functions/commit.js';
import { createCompactHandler } from '../../functions/compact.js';
import { createDiscoverHandler } from '../../functions/discover.js';
import { createExpireHandler } from '../../functions/expire.js';
import { createIngestHandler } from '../../functions/ingest.js';
import { createStreamHandler } from '../../functions/shared/stream-handler.js';
import { openCatalog } from '../../lib/catalog/open-catalog.js';
import { TableNotFoundError } from '../../lib/errors.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import type { Change } from '../../lib/stream/sinks.js';
import { awsAvailable } from '../helpers/aws.js';
import {
  captureMetrics,
  drain,
  objectCreatedEvent,
  powertoolsEnv,
  scheduledEvent,
  sendBodies,
} from '../functions/harness.js';

// The handlers' EMF metric lines stay off the test output.
captureMetrics();

type Env = Record<string, string>;

/** Every function's environment as CloudFormation would set it in this deployment. */
function envOf(template: CfnTemplate, d: Deployment, fn: string): Env {
  const f = functionsOf(template).find((x) => x.logicalId === fn)!;
  return d.resolver.resolve(f.environment) as Env;
}

/** A day in miniature: queue and inbox ingestion, group commits, discovery, reads, compaction, expiry. */
async function runPipeline(template: CfnTemplate, d: Deployment, fns: ExampleFunctions): Promise<Change[]> {
  const env = (k: keyof ExampleFunctions) => envOf(template, d, fns[k]);
  // The operator creates the table (docs/AWS.md step 6): not a function, not audited.
  await openCatalog(env('ingest').VARVE_WAREHOUSE, env('ingest')).createTable('shop.orders', {
    fields: parseSchemaText('id BIGINT, status STRING, amount DOUBLE'),
    primaryKeys: ['id'],
    options: {
      bucket: '2',
      'num-sorted-run.compaction-trigger': '2',
      'snapshot.num-retained.min': '1',
      'snapshot.num-retained.max': '2',
    },
  });
  const seen: Change[] = [];
  const ingest = createIngestHandler(env('ingest'));
  const commit = createCommitHandler(env('commit'));
  const discover = createDiscoverHandler(env('discover'));
  const read = createStreamHandler(async (changes) => void seen.push(...changes), env('read'));
  for (let round = 0; round < 2; round++) {
    await sendBodies(ingestQueueUrl(template, d), [
      JSON.stringify({ id: round * 10 + 1, status: 'new', amount: round }),
      JSON.stringify([
        { id: round * 10 + 2, status: 'new', amount: 1 },
        { id: 1, status: `r${round}`, amount: 2 },
      ]),
    ]);
    // Lambda's event source mapping polls with the function's own role: attributed to it.
    await withFunction(fns.ingest, () => drain(ingestQueueUrl(template, d), ingest as never, 10));
    await withFunction(fns.commit, () => drain(env('ingest').VARVE_COMMIT_QUEUE_URL, commit));
    await withFunction(fns.discover, () => discover(scheduledEvent()));
    await withFunction(fns.read, () => drain(env('discover').VARVE_SPLIT_QUEUE_URL, read));
  }
  // A file dropped in the inbox, as S3 → EventBridge → ingest delivers it.
  const key = `warehouse/inbox/shop/orders/batch-1.jsonl`;
  const s3 = new S3Client({ forcePathStyle: true });
  const put = await s3.send(
    new PutObjectCommand({ Bucket: d.bucket, Key: key, Body: '{"id":100,"status":"file","amount":5}\n' }),
  );
  s3.destroy();
  await withFunction(fns.ingest, () => ingest(objectCreatedEvent(d.bucket, key, put.ETag!.replace(/"/g, ''), 40)));
  await withFunction(fns.commit, () => drain(env('ingest').VARVE_COMMIT_QUEUE_URL, commit));
  // Compaction jobs the commits enqueued (batch size 1, as the mapping), then expiry.
  await withFunction(fns.compact, () =>
    drain(env('ingest').VARVE_COMPACT_QUEUE_URL, createCompactHandler(env('compact')), 1),
  );
  await withFunction(fns.expire, () => createExpireHandler(env('expire'))(scheduledEvent()));
  // The daily safety-net orphan scan (a bounded listing of the table and its resume marker).
  await withFunction(fns.expire, () => createExpireHandler(env('expire'))({ orphanScan: true }));
  await withFunction(fns.discover, () => discover(scheduledEvent()));
  await withFunction(fns.read, () => drain(env('discover').VARVE_SPLIT_QUEUE_URL, read));
  return seen;
}

function ingestQueueUrl(template: CfnTemplate, d: Deployment): string {
  const [id] = Object.entries(template.Resources).find(
    ([k, r]) => r.Type === 'AWS::SQS::Queue' && /IngestQueue(?!Dlq)/.test(k),
  )!;
  return d.physical.get(id)!.ref;
}

/** One synthesis for the whole file (synth is the slow part of a CDK test). */
let synthesised: ReturnType<typeof synthExample> | undefined;
const example = () => (synthesised ??= synthExample({}, cdkOutdir()));

describe.skipIf(!awsAvailable())('IAM audit of the example stack', () => {
  let template: CfnTemplate;
  let fns: ExampleFunctions;
  let d: Deployment;
  let report: AuditReport;
  let audit: IamAudit;
  let changes: Change[];

  beforeAll(async () => {
    powertoolsEnv();
    ({ template, fns } = example());
    d = await deployTemplate(template);
    audit = new IamAudit(template, d.resolver);
    const stop = onCall((c) => audit.record(c));
    try {
      changes = await runPipeline(template, d, fns);
    } finally {
      stop();
    }
    report = await audit.evaluate();
    // Synthesis of the example stack alone takes most of a minute on a busy 2-core machine.
  }, 400_000);

  it('records the calls of every function and finds no denial', () => {
    expect(changes.length).toBeGreaterThan(0);
    for (const fn of Object.values(fns)) expect(Object.keys(report.byFunction[fn] ?? {}).length, fn).toBeGreaterThan(0);
    expect(formatDenials(report.denials)).toBe('');
  });

  it('the reader opens the table through the configured DynamoDB catalog, not the folder (repro 6)', async () => {
    // A table whose catalog item is gone (dropped from the catalog) while its folder remains:
    // the folder catalog would still open it; the configured catalog says it does not exist.
    const env = envOf(template, d, fns.read);
    const catalog = openCatalog(env.VARVE_WAREHOUSE, env);
    await catalog.createTable('shop.gone', {
      fields: parseSchemaText('id BIGINT'),
      primaryKeys: ['id'],
      options: { bucket: '1' },
    });
    await new DynamoDBClient({}).send(
      new DeleteItemCommand({ TableName: env.VARVE_CATALOG_TABLE, Key: { name: { S: 'shop.gone' } } }),
    );
    const read = createStreamHandler(() => undefined, { ...env, VARVE_TABLE: 'shop.gone' });
    await expect(withFunction(fns.read, () => read({ Records: [] }))).rejects.toThrow(TableNotFoundError);
  });

  it('holds 404s to 404s: a probe of a missing key is covered by s3:ListBucket (issue 11, repro 1)', () => {
    const missing = audit
      .recorded()
      .filter(
        (c) => c.service === 'S3' && (c.command === 'HeadObject' || c.command === 'GetObject') && c.status === 404,
      );
    // latestId() probes the snapshot after LATEST on every commit: the rule is exercised.
    expect(missing.length).toBeGreaterThan(0);
  });
});

/** The template with the statements `drop` picks removed from the policies of `roleFn`'s role. */
function withoutStatement(
  template: CfnTemplate,
  roleFn: string,
  drop: (s: PolicyDocument['Statement'][number]) => boolean,
): CfnTemplate {
  const copy = structuredClone(template);
  const f = functionsOf(copy).find((x) => x.logicalId === roleFn)!;
  for (const r of Object.values(copy.Resources)) {
    if (r.Type !== 'AWS::IAM::Policy') continue;
    if (!(r.Properties!.Roles as { Ref: string }[]).some((x) => x.Ref === f.roleId)) continue;
    const doc = r.Properties!.PolicyDocument as PolicyDocument;
    doc.Statement = doc.Statement.filter((s) => !drop(s));
  }
  return copy;
}

describe.skipIf(!awsAvailable())('IAM audit decisions', () => {
  let template: CfnTemplate;
  let fns: ExampleFunctions;
  let d: Deployment;
  const tablePrefix = 'warehouse/shop.db/orders';
  const obj = (key: string) => `arn:aws:s3:::${d.bucket}/${tablePrefix}/${key}`;

  beforeAll(async () => {
    ({ template, fns } = example());
    d = await deployTemplate(template);
  }, 400_000);

  async function decide(
    t: CfnTemplate,
    fn: string,
    action: string,
    resource: string,
    context: Record<string, string> = {},
  ): Promise<string> {
    return new IamAudit(t, d.resolver).check(fn, { action, resource, context });
  }

  it('catches a missing grant: the commit role without sqs:SendMessage is denied its compaction jobs', async () => {
    const broken = withoutStatement(template, fns.commit, (s) =>
      ([] as string[]).concat(s.Action ?? []).includes('sqs:SendMessage'),
    );
    const audit = new IamAudit(broken, d.resolver);
    const queueUrl = envOf(template, d, fns.commit).VARVE_COMPACT_QUEUE_URL;
    audit.record({
      fn: fns.commit,
      service: 'SQS',
      command: 'SendMessageBatch',
      input: { QueueUrl: queueUrl },
      status: 200,
    });
    audit.record({
      fn: fns.commit,
      service: 'S3',
      command: 'HeadObject',
      input: { Bucket: d.bucket, Key: `${tablePrefix}/snapshot/snapshot-9` },
      status: 404,
    });
    const report = await audit.evaluate();
    expect(report.denials.map((x) => `${x.action} ${x.result}`)).toEqual(['sqs:SendMessage ImplicitlyDenied']);
    // The same calls under the real template pass.
    const ok = new IamAudit(template, d.resolver);
    for (const c of audit.recorded()) ok.record(c);
    expect((await ok.evaluate()).denials).toEqual([]);
  });

  it('a GET/HEAD of a missing key needs s3:ListBucket without s3:prefix; a listing of another table stays denied (repro 1)', async () => {
    for (const fn of Object.values(fns)) {
      expect(await decide(template, fn, 's3:ListBucket', `arn:aws:s3:::${d.bucket}`), fn).toBe('Allowed');
      expect(
        await decide(template, fn, 's3:ListBucket', `arn:aws:s3:::${d.bucket}`, {
          's3:prefix': `${tablePrefix}/snapshot/`,
        }),
        fn,
      ).toBe('Allowed');
      expect(
        await decide(template, fn, 's3:ListBucket', `arn:aws:s3:::${d.bucket}`, {
          's3:prefix': 'warehouse/other.db/t/',
        }),
        fn,
      ).toBe('ImplicitlyDenied');
    }
  });

  it("only expiry deletes snapshots and schemas; deletes stay in each function's own prefixes (repro 6)", async () => {
    for (const key of ['snapshot/snapshot-1', 'snapshot/LATEST', 'schema/schema-0']) {
      for (const fn of [fns.ingest, fns.commit, fns.compact, fns.discover, fns.read]) {
        expect(await decide(template, fn, 's3:DeleteObject', obj(key)), `${fn} ${key}`).toBe('ImplicitlyDenied');
      }
    }
    expect(await decide(template, fns.expire, 's3:DeleteObject', obj('snapshot/snapshot-1'))).toBe('Allowed');
    expect(await decide(template, fns.commit, 's3:DeleteObject', obj('manifest/manifest-abc-0'))).toBe('Allowed');
    expect(await decide(template, fns.compact, 's3:DeleteObject', obj('bucket-0/data-abc-0.parquet'))).toBe('Allowed');
    // Nobody but expiry (snapshots) and the committers writes snapshots, and never without If-None-Match.
    expect(await decide(template, fns.commit, 's3:PutObject', obj('snapshot/snapshot-3'))).toBe('ExplicitlyDenied');
    expect(
      await decide(template, fns.commit, 's3:PutObject', obj('snapshot/snapshot-3'), { 's3:if-none-match': '*' }),
    ).toBe('Allowed');
    expect(
      await decide(template, fns.read, 's3:PutObject', obj('snapshot/snapshot-3'), { 's3:if-none-match': '*' }),
    ).toBe('ImplicitlyDenied');
  });

  it('consumer grants are exact: consumer-<id> and consumer-<id>@…, never another consumer sharing the prefix (repro 6)', async () => {
    const id = 'orders-audit';
    expect(await decide(template, fns.discover, 's3:PutObject', obj(`consumer/consumer-${id}`))).toBe('Allowed');
    expect(await decide(template, fns.discover, 's3:DeleteObject', obj(`consumer/consumer-${id}@splits/7/s-0`))).toBe(
      'Allowed',
    );
    expect(await decide(template, fns.read, 's3:PutObject', obj(`consumer/consumer-${id}@progress/bucket-0`))).toBe(
      'Allowed',
    );
    expect(await decide(template, fns.read, 's3:PutObject', obj(`consumer/consumer-${id}@fence/bucket-0`))).toBe(
      'Allowed',
    );
    expect(await decide(template, fns.read, 's3:GetObject', obj(`consumer/consumer-${id}@fence/bucket-0`))).toBe(
      'Allowed',
    );
    expect(await decide(template, fns.read, 's3:DeleteObject', obj(`consumer/consumer-${id}@fence/bucket-0`))).toBe(
      'ImplicitlyDenied',
    );
    for (const other of [
      `consumer/consumer-${id}-v2`,
      `consumer/consumer-${id}2`,
      `consumer/consumer-${id}-v2@progress/bucket-0`,
      `consumer/consumer-${id}-v2@fence/bucket-0`,
    ]) {
      expect(await decide(template, fns.discover, 's3:PutObject', obj(other)), other).toBe('ImplicitlyDenied');
      expect(await decide(template, fns.read, 's3:PutObject', obj(other)), other).toBe('ImplicitlyDenied');
    }
    expect(await decide(template, fns.read, 's3:PutObject', obj(`consumer/consumer-${id}`))).toBe('ImplicitlyDenied');
  });
});
