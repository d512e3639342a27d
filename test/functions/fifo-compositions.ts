/**
 * The scenario of split-fifo-compositions.test.ts (and its stress variant): random snapshots over
 * random buckets planned into a real SQS FIFO split queue on moto (with its dead-letter queue and
 * the deployed maxReceiveCount), consumed by the e2e emulator's event source mapping (batches of
 * up to 10 mixing groups, several pollers, failed messages held per group as SQS does) invoking
 * the real split handler in-process. Each split draws its own failure sequence from the seed: sink
 * errors, a sink slower than the reader's deadline, an invocation whose response is lost after its
 * sink calls (as when the runtime dies), then success; never more own failures than the budget.
 * What must hold: every change arrives, per bucket in snapshot order and per key in version order,
 * and no split reaches the dead-letter queue (none failed on its own SPLIT_FAILURE_BUDGET times).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { openStore } from '../../lib/store/open-store.js';
import { discover, ensureConsumer } from '../../lib/stream/discovery.js';
import { SPLIT_FAILURE_BUDGET } from '../../lib/stream/split-failures.js';
import { SqsSplitQueue } from '../../lib/stream/sqs-queue.js';
import { createStreamHandler } from '../../functions/shared/stream-handler.js';
import { log } from '../../functions/shared/observability.js';
import { EmulatedMapping, handlerVisibility, noteVisibilityChange } from '../../e2e/emulator/esm.js';
import type { EmulatedFunction, InvokeResult } from '../../e2e/emulator/lambda.js';
import { installAuditMiddleware, onCall, withFunction } from '../../e2e/iam/recorder.js';
import * as queues from '../../infra/queues.js';
import { mulberry32, rng as makeRng } from '../helpers/random.js';
import { put } from '../stream/fixtures.js';
import { createQueue, queueArn, sqs, uniqueName } from './harness.js';

/** The split queue's maxReceiveCount as deployed (infra/queues.ts). */
const DEPLOYED_MAX_RECEIVES =
  (queues as { SPLIT_MAX_RECEIVE_COUNT?: number }).SPLIT_MAX_RECEIVE_COUNT ?? queues.MAX_RECEIVE_COUNT;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Outcome = 'error' | 'slow' | 'lost';

export interface CompositionOptions {
  seed: number;
  /** Snapshots written (each over a random set of keys). */
  snapshots: [number, number];
  keys: number;
  buckets: [number, number];
  /** Chance that a split fails at all. */
  failChance: number;
  /** Give up waiting for the deliveries after this long. */
  limitMs: number;
}

export interface CompositionResult {
  missing: string[];
  orderViolations: string[];
  deadLettered: number;
  /** The reader's ERROR lines (a split moved to the dead-letter queue). */
  deadLetterLines: string[];
  stats: {
    batches: number;
    records: number;
    partialFailures: number;
    ownFailures: number;
    behind: number;
    maxReceive: number;
    splits: number;
    buckets: number;
    reasons: Record<string, number>;
  };
}

/** A split's failure sequence, the same whatever order the splits are met in. */
function planOf(seed: number, snapshot: number, bucket: number, failChance: number): Outcome[] {
  const r = makeRng(Math.floor(mulberry32(seed ^ (snapshot * 7919 + bucket * 104729))() * 2 ** 31));
  if (!r.chance(failChance)) return [];
  // Own failures (sink error, slow sink) stay below the budget; a lost response is not the split's own.
  const own = r.int(1, SPLIT_FAILURE_BUDGET - 1);
  const plan: Outcome[] = [];
  for (let i = 0; i < own; i++) plan.push(r.chance(0.2) ? 'slow' : 'error');
  if (r.chance(0.25)) plan.splice(r.int(0, plan.length), 0, 'lost');
  return plan;
}

/** Runs one scenario. */
export async function runComposition(o: CompositionOptions): Promise<CompositionResult> {
  const r = makeRng(o.seed);
  const buckets = r.int(o.buckets[0], o.buckets[1]);
  const warehouse = `memory://fifo-compositions-${o.seed}-${uniqueName('w')}`;
  const table = await new FolderCatalog(openStore(warehouse)).createTable('db.t', {
    fields: parseSchemaText('k BIGINT, v STRING'),
    primaryKeys: ['k'],
    options: { bucket: String(buckets) },
  });
  await ensureConsumer(table, 'audit', { mode: 'earliest' });
  const dlqUrl = await createQueue(`${uniqueName('split-dlq')}.fifo`);
  const url = await createQueue(`${uniqueName('splits')}.fifo`, {
    VisibilityTimeout: '30',
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: await queueArn(dlqUrl),
      maxReceiveCount: String(DEPLOYED_MAX_RECEIVES),
    }),
  });
  const env = {
    VARVE_WAREHOUSE: warehouse,
    VARVE_TABLE: 'db.t',
    VARVE_CONSUMER_ID: 'audit',
    VARVE_SPLIT_VISIBILITY_S: '30',
    VARVE_SPLIT_DLQ_URL: dlqUrl,
  };

  // The sink: per bucket, the snapshots it took in order; per key, the versions.
  const bySplit = new Map<string, number>(); // sink calls per split
  const bucketOrder = new Map<number, number[]>();
  const keyOrder = new Map<string, number[]>();
  const invocation = new AsyncLocalStorage<{ lost: boolean }>();
  // A Lambda timeout long enough that a loaded machine's reads never run out of time; a slow sink outlives it.
  const REMAINING_MS = 6000;
  const handler = createStreamHandler(async (changes, batch) => {
    const id = `${batch.snapshotId}/${batch.bucket}`;
    const n = bySplit.get(id) ?? 0;
    bySplit.set(id, n + 1);
    const step = planOf(o.seed, batch.snapshotId, batch.bucket, o.failChance)[n];
    if (step === 'error') throw new Error(`sink fault on split ${id}, attempt ${n + 1}`);
    if (step === 'slow') {
      await sleep(REMAINING_MS + 300);
      return;
    }
    if (step === 'lost') invocation.getStore()!.lost = true;
    bucketOrder.set(batch.bucket, [...(bucketOrder.get(batch.bucket) ?? []), batch.snapshotId]);
    for (const c of changes) keyOrder.set(String(c.row.k), [...(keyOrder.get(String(c.row.k)) ?? []), Number(c.row.v)]);
  }, env);

  // The handler's own visibility changes (its backoffs) reach the emulator as the e2e's audit does.
  installAuditMiddleware();
  const stopAudit = onCall(noteVisibilityChange);
  handlerVisibility.timeScale = 10;
  const fn = {
    spec: { logicalId: 'Reader' },
    invoke: (event: SQSEvent): Promise<InvokeResult> =>
      withFunction('Reader', () =>
        invocation.run({ lost: false }, async (): Promise<InvokeResult> => {
          const deadline = Date.now() + REMAINING_MS;
          const context = {
            awsRequestId: uniqueName('req'),
            getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
          } as unknown as Context;
          try {
            const value: SQSBatchResponse = await handler(event, context);
            if (invocation.getStore()!.lost)
              return { ok: false, kind: 'crash', error: { message: 'the runtime died after its sink calls' } };
            return { ok: true, value };
          } catch (e) {
            return { ok: false, kind: 'error', error: { name: (e as Error).name, message: (e as Error).message } };
          }
        }),
      ),
  } as unknown as EmulatedFunction;
  const mapping = new EmulatedMapping(
    {
      logicalId: 'SplitMapping',
      queueUrl: url,
      queueArn: await queueArn(url),
      fifo: true,
      batchSize: 10,
      windowSeconds: 0,
      reportBatchItemFailures: true,
      maxConcurrency: r.int(2, 5),
      visibilityTimeout: 30,
    },
    fn,
    30,
  );

  // Why each split failed (the handler's WARN lines), and the receive counts seen.
  const warn = log().warn.bind(log());
  let ownFailures = 0;
  let behind = 0;
  const reasons: Record<string, number> = {};
  let maxReceive = 0;
  log().warn = ((msg: string, ...rest: unknown[]) => {
    const f = rest[0] as { reason?: string; receiveCount?: number } | undefined;
    if (String(msg).startsWith('split of snapshot') && f) {
      if (f.reason === 'behind') behind++;
      else ownFailures++;
      reasons[f.reason ?? '?'] = (reasons[f.reason ?? '?'] ?? 0) + 1;
      maxReceive = Math.max(maxReceive, f.receiveCount ?? 0);
      return;
    }
    if (String(msg).startsWith('the own failures')) return warn(msg, ...(rest as []));
  }) as typeof warn;
  const error = log().error.bind(log());
  const deadLetterLines: string[] = [];
  log().error = ((msg: string) => void deadLetterLines.push(String(msg))) as typeof error;

  const expected = new Map<string, number[]>();
  const queue = new SqsSplitQueue({ queueUrl: url });
  mapping.start();
  try {
    const snapshots = r.int(o.snapshots[0], o.snapshots[1]);
    for (let s = 0; s < snapshots; s++) {
      const rows: [number, string][] = [];
      const keys = new Set<number>();
      const count = r.int(1, Math.min(o.keys, 2 * buckets + 2));
      while (keys.size < count) keys.add(r.int(0, o.keys - 1));
      for (const k of keys) {
        const v = (expected.get(String(k))?.length ?? 0) + 1;
        expected.set(String(k), [...(expected.get(String(k)) ?? []), v]);
        rows.push([k, String(v)]);
      }
      await put(table, rows);
      // Several snapshots planned at once put several splits of a bucket into one batch.
      if (r.chance(0.4) || s === snapshots - 1) await discover(table, queue, 'audit');
    }
    const until = Date.now() + o.limitMs;
    const done = () => [...expected].every(([k, vs]) => (keyOrder.get(k) ?? []).length >= vs.length);
    while (Date.now() < until && !done()) await sleep(200);
    // Anything still in flight settles (a lost response's redelivery, a duplicate).
    await sleep(500);
  } finally {
    await mapping.stop();
    stopAudit();
    log().warn = warn;
    log().error = error;
    handlerVisibility.timeScale = 1;
  }

  const missing: string[] = [];
  const orderViolations: string[] = [];
  for (const [k, vs] of expected) {
    const got = keyOrder.get(k) ?? [];
    for (const v of vs) if (!got.includes(v)) missing.push(`k=${k} v=${v}`);
    for (let i = 1; i < got.length; i++) if (got[i] <= got[i - 1]) orderViolations.push(`k=${k}: ${got.join(',')}`);
  }
  for (const [b, snaps] of bucketOrder) {
    for (let i = 1; i < snaps.length; i++)
      if (snaps[i] <= snaps[i - 1]) orderViolations.push(`bucket ${b}: snapshots ${snaps.join(',')}`);
  }
  const attrs = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return {
    missing,
    orderViolations,
    deadLettered: Number(attrs.Attributes?.ApproximateNumberOfMessages ?? 0),
    deadLetterLines,
    stats: {
      batches: mapping.batches,
      records: mapping.records,
      partialFailures: mapping.partialFailures,
      ownFailures,
      behind,
      maxReceive,
      splits: bySplit.size,
      buckets,
      reasons,
    },
  };
}
