/**
 * The scripted day of e2e/run.ts: rounds of traffic into `shop.orders` (record batches on the
 * ingest queue, a file in the inbox), with one fault per round, the schedules firing on the
 * emulator's clock, and at the end the count of what the consumer's sink received against what
 * was sent: every valid record version (id, v) must arrive, per key in order; duplicates are
 * allowed (at-least-once) and counted.
 *
 * Faults: a poison record and a non-JSON body (→ rejects), a poison commit message at the head of
 * the commit group, a split whose sink fails 3 times then succeeds, a sink slower than its
 * timeout, a duplicate inbox event, the same ingest messages redelivered in different batch
 * compositions (lost deletes), a handler crash mid-batch, discovery triggered twice at once.
 */
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { openCatalog } from '../lib/catalog/open-catalog.js';
import { parseSchemaText } from '../lib/schema/parse.js';
import { functionsOf } from './aws/template.js';
import { formatDenials } from './iam/audit.js';
import { Emulator } from './emulator/emulator.js';
import { E2E_STACK_NAME } from './names.js';

/** What a run found. */
export interface DayResult {
  line: string;
  ok: boolean;
}

interface Options {
  assembly: string;
  stateDir: string;
  rounds: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (...a: unknown[]) => console.log('e2e:', ...a);

/** Runs the day; returns the closing line and whether it passed. */
export async function runDay(opts: Options): Promise<DayResult> {
  const delivered: { id: string; v: number; tag: string }[] = [];
  let loseDeletes = false;
  const lostDeleteIds = new Set<string>();
  const emu = await Emulator.deploy({
    assembly: opts.assembly,
    stack: E2E_STACK_NAME,
    // Visibility timeouts pass 120× faster (6 min → 3 s); function timeouts are real.
    timeScale: 120,
    extraEnv: { VARVE_E2E_STATE_DIR: opts.stateDir, POWERTOOLS_LOG_LEVEL: 'WARN', POWERTOOLS_METRICS_DISABLED: 'true' },
    logFile: `${opts.assembly}/e2e-functions.log`,
    onLog: (_fn, line) => {
      if (!line.startsWith('{"e2e":"change"')) return;
      const c = JSON.parse(line) as { id: string; v: string; tag: string };
      delivered.push({ id: c.id, v: Number(c.v), tag: c.tag });
    },
    faults: {
      // The same messages come back, in other batch compositions, after their visibility lapses.
      loseDelete: (mapping, messages) => {
        if (!loseDeletes || !/IngestSqsEventSource/.test(mapping.logicalId)) return false;
        const fresh = messages.filter((m) => !lostDeleteIds.has(m.MessageId!));
        if (fresh.length === 0) return false;
        for (const m of fresh) lostDeleteIds.add(m.MessageId!);
        return true;
      },
    },
  });
  const fnId = (re: RegExp) => functionsOf(emu.template).find((f) => re.test(f.logicalId) && emu.functions.has(f.logicalId))!.logicalId;
  const queueId = (re: RegExp) => emu.queues().find((q) => re.test(q))!;
  const ingestFn = fnId(/Ingest/);
  const env = emu.envOf(ingestFn);
  const ingestUrl = emu.ref(queueId(/IngestQueue(?!Dlq)/));
  const commitUrl = env.VARVE_COMMIT_QUEUE_URL;
  const s3 = new S3Client({ forcePathStyle: true });
  const sqs = new SQSClient({});

  // The operator creates the table (docs/AWS.md step 6); not a function, not audited.
  await openCatalog(env.VARVE_WAREHOUSE, env).createTable('shop.orders', {
    fields: parseSchemaText('id BIGINT, v BIGINT, status STRING'),
    primaryKeys: ['id'],
    options: { bucket: '4', 'num-sorted-run.compaction-trigger': '3', 'snapshot.num-retained.min': '3', 'snapshot.num-retained.max': '6', 'snapshot.time-retained': '1 s' },
  });

  const expected = new Map<string, number[]>(); // id → versions sent, in order
  const version = new Map<number, number>();
  const next = (id: number, status = 'ok') => {
    const v = (version.get(id) ?? 0) + 1;
    version.set(id, v);
    expected.set(String(id), [...(expected.get(String(id)) ?? []), v]);
    return { id, v, status };
  };
  const sendRecords = async (bodies: string[]) => {
    for (let i = 0; i < bodies.length; i += 10) {
      await sqs.send(new SendMessageBatchCommand({ QueueUrl: ingestUrl, Entries: bodies.slice(i, i + 10).map((b, k) => ({ Id: String(k), MessageBody: b })) }));
    }
  };
  const quiet = async (what: string, queues: RegExp, limitMs = 120_000) => {
    const ids = emu.queues().filter((q) => queues.test(q) && !/Dlq|Rejects/.test(q));
    const until = Date.now() + limitMs;
    let calm = 0;
    while (Date.now() < until) {
      const depths = await Promise.all(ids.map((q) => emu.depth(q)));
      const busy = emu.mappings.some((m) => m.inFlight > 0) || emu.pendingAsync > 0;
      calm = depths.every((d) => d === 0) && !busy ? calm + 1 : 0;
      if (calm >= 3) return;
      await sleep(300);
    }
    log(`warning: ${what} did not settle within ${limitMs / 1000} s`);
  };

  const faultsSeen: string[] = [];
  emu.start();
  const started = Date.now();
  try {
    const KEYS = 24;
    for (let round = 0; round < opts.rounds; round++) {
      const ids = Array.from({ length: 8 }, (_, k) => ((round * 5 + k * 3) % KEYS) + 1);
      const recs = ids.map((id) => next(id));
      const bodies = [JSON.stringify(recs.slice(0, 3)), ...recs.slice(3).map((r) => JSON.stringify(r))];
      const fault = round % 9;
      if (fault === 0) {
        faultsSeen.push('poison record');
        bodies.push(JSON.stringify({ id: 'not-a-number', v: 1, status: 'poison' }), 'this is not JSON');
      }
      if (fault === 2) {
        faultsSeen.push('sink fails 3 times then succeeds');
        const r = next(100 + round, `fail3:r${round}`);
        bodies.push(JSON.stringify(r));
      }
      if (fault === 3) {
        faultsSeen.push('sink slower than its timeout');
        bodies.push(JSON.stringify(next(100 + round, `slow:r${round}`)));
      }
      if (fault === 5) {
        faultsSeen.push('redelivery in other batch compositions');
        loseDeletes = true;
      }
      if (fault === 6) {
        faultsSeen.push('handler crash mid-batch');
        bodies.push(JSON.stringify([next(200 + round), next(300 + round, `crash:r${round}`)]));
      }
      await sendRecords(bodies);
      if (fault === 1) {
        // A commit message no commit can make sense of, at the head of the table's one group,
        // with good work right behind it.
        faultsSeen.push('poison commit message');
        await sqs.send(new SendMessageCommand({ QueueUrl: commitUrl, MessageBody: '{"version":1,"table":"shop.orders","files":"garbage"}', MessageGroupId: 'shop.orders', MessageDeduplicationId: `poison-${round}` }));
      }
      if (fault === 4) {
        // One file dropped in the inbox; EventBridge delivers its Object Created event twice.
        faultsSeen.push('duplicate inbox event');
        const key = `${env.VARVE_WAREHOUSE.split('/').slice(3).join('/')}/inbox/shop/orders/round-${round}.jsonl`;
        const lines = [next(400 + round), next(401 + round)].map((r) => JSON.stringify(r)).join('\n');
        const put = await s3.send(new PutObjectCommand({ Bucket: emu.deployment.bucket, Key: key, Body: `${lines}\n` }));
        const detail = { version: '0', bucket: { name: emu.deployment.bucket }, object: { key, size: lines.length + 1, etag: put.ETag!.replace(/"/g, ''), sequencer: '0' }, 'request-id': 'e2e', requester: 'e2e', reason: 'PutObject' };
        await emu.putEvent('default', 'aws.s3', 'Object Created', detail);
        await emu.putEvent('default', 'aws.s3', 'Object Created', detail);
      }
      if (fault === 7) {
        // Two discovery runs at once: the schedule and a second trigger in the same instant.
        faultsSeen.push('discovery triggered twice at once');
        emu.fireSchedule(/DiscoverSchedule/);
        emu.fireSchedule(/DiscoverSchedule/);
      }
      await quiet(`round ${round} ingestion`, /Ingest|Commit/);
      loseDeletes = false;
      emu.fireSchedule(/DiscoverSchedule/);
      if (round % 4 === 3) emu.fireSchedule(/ExpireSchedule/);
      await quiet(`round ${round} delivery`, /./);
      log(`round ${round + 1}/${opts.rounds} (${faultsSeen.at(-1) ?? '-'}): ${delivered.length} changes delivered so far, ${Math.round((Date.now() - started) / 1000)} s`);
    }
    // Drain: discovery until every committed change reached the sink.
    for (let i = 0; i < 5; i++) {
      emu.fireSchedule(/DiscoverSchedule/);
      await quiet('final delivery', /./);
    }
  } finally {
    await emu.stop();
  }

  // Count.
  const seen = new Map<string, number>(); // `${id}/${v}` → times
  const maxV = new Map<string, number>();
  let orderViolations = 0;
  let duplicates = 0;
  for (const d of delivered) {
    const k = `${d.id}/${d.v}`;
    const times = (seen.get(k) ?? 0) + 1;
    seen.set(k, times);
    if (times > 1) duplicates++;
    const max = maxV.get(d.id) ?? 0;
    if (d.v < max && times === 1) orderViolations++;
    // A redelivered older version after a newer one is out of order too.
    if (d.v < max && times > 1) orderViolations++;
    maxV.set(d.id, Math.max(max, d.v));
  }
  let total = 0;
  const lost: string[] = [];
  for (const [id, vs] of expected) {
    for (const v of vs) {
      total++;
      if (!seen.has(`${id}/${v}`)) lost.push(`${id}/${v}`);
    }
  }
  const deliveredDistinct = total - lost.length;
  let dlq = 0;
  for (const q of emu.queues().filter((q) => /Dlq/.test(q))) dlq += await emu.depth(q);
  const audit = await emu.audit.evaluate();

  log(`${audit.calls} AWS calls audited (${audit.checks} distinct authorisations) from ${emu.functions.size} functions`);
  for (const [fn, f] of emu.functions) {
    const cold = f.stats.map((s) => s.coldStartMs);
    const spawn = f.stats.map((s) => s.spawnMs);
    log(
      `${fn}: ${f.invocations} invocations, ${f.errors} failed, ${f.stats.length} containers, cold start (module load + wasm init) ` +
        `median ${median(cold).toFixed(0)} ms, max ${Math.max(0, ...cold).toFixed(0)} ms; process start to ready median ${median(spawn).toFixed(0)} ms; memory ${f.spec.memoryMb} MB, timeout ${f.spec.timeoutSeconds} s`,
    );
  }
  for (const m of emu.mappings) log(`${m.spec.logicalId}: ${m.batches} batches, ${m.failedBatches} failed whole, ${m.partialFailures} with partial failures`);
  log(`faults: ${faultsSeen.join(', ')}; async invocations that exhausted their retries: ${emu.asyncFailures}`);
  if (lost.length) log(`LOST (id/version): ${lost.slice(0, 30).join(' ')}${lost.length > 30 ? ' …' : ''}`);
  if (audit.denials.length) log(`IAM DENIALS: ${formatDenials(audit.denials).replace(/\n/g, ' | ')}`);
  log(`took ${Math.round((Date.now() - started) / 1000)} s`);
  const line = `e2e: changes delivered ${deliveredDistinct}/${total}, duplicates ${duplicates}, order violations ${orderViolations}, lost ${lost.length}, IAM denials ${audit.denials.length}, dlq ${dlq}`;
  return { line, ok: lost.length === 0 && orderViolations === 0 && audit.denials.length === 0 };
}

function median(xs: number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}
