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
 * compositions (lost deletes), a handler crash mid-batch, discovery triggered twice at once, a
 * commit batch dead-lettered while a newer batch of its keys commits and then brought back by
 * `varve redrive` (redrive-round.ts), and a round of S3 409 / 503 SlowDown answers and Lambda
 * throttling (the emulator's service faults, seeded by VARVE_E2E_SEED). Each is proven from what
 * it left (rejects, attempt counts, timeouts and crashes, sources in snapshots, redelivered
 * batches, discovery triggers handled, what the redrive printed, injected counts); one that did
 * not happen fails the run. At the end the table itself is read: every key must hold the version
 * sent last (a key holding an older one is a stale win).
 */
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { DeleteMessageBatchCommand, SendMessageBatchCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { deflateRawSync } from 'node:zlib';
import { openCatalog } from '../lib/catalog/open-catalog.js';
import { parseSchemaText } from '../lib/schema/parse.js';
import { SOURCES_PROPERTY } from '../lib/table/recent-batches.js';
import { messageSource, objectSource } from '../lib/table/ingested-sources.js';
import { readTable } from '../lib/table/read.js';
import type { Table } from '../lib/table/table.js';
import { coldRequestReport } from './cold-requests.js';
import { DeadLetterFault, redriveRound } from './redrive-round.js';
import { receiveMessages } from './emulator/sqs-event.js';
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
  /** Rounds of traffic, one fault each (default: one per fault). */
  rounds?: number;
  /** Seed of the service faults' draws (printed; VARVE_E2E_SEED repeats a run's draws). */
  seed: number;
  /** How much faster than real time the queues' visibility timeouts pass (the emulator's only time change). */
  timeScale: number;
  /** How long a round may take to settle before the run goes on (and the count finds what is missing). */
  settleMs: number;
}

/** The faults of the issue's scripted day, in the order the rounds inject them. */
export const FAULTS = [
  'poison record',
  'poison commit message',
  'sink fails 3 times then succeeds',
  'sink slower than its timeout',
  'duplicate inbox event',
  'redelivery in other batch compositions',
  'handler crash mid-batch',
  'discovery triggered twice at once',
  'commit dead-lettered, newer batch committed, then redriven',
  'S3 409 / 503 SlowDown and Lambda throttling',
] as const;
export type Fault = (typeof FAULTS)[number];

/** The service faults of the fault round: S3 409s on conditional requests, 503s on any, Lambda throttles. */
const FAULT_ROUND_RATES = { s3ConflictRate: 0.25, s3SlowDownRate: 0.05, throttleRate: 0.2 };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (...a: unknown[]) => console.log('e2e:', ...a);

/** Runs the day; returns the closing line and whether it passed. */
export async function runDay(opts: Options): Promise<DayResult> {
  const rounds = opts.rounds ?? FAULTS.length;
  log(`seed ${opts.seed} (VARVE_E2E_SEED=${opts.seed} repeats the service faults' draws)`);
  const deadLetter = new DeadLetterFault();
  /** Versions a newer one replaced before they committed (left out by the redrive): never delivered, not lost. */
  const superseded = new Set<string>();
  const delivered: { id: string; v: number; tag: string }[] = [];
  let loseDeletes = false;
  const lostDeleteIds = new Set<string>();
  const firstBatch = new Map<string, string>();
  const redelivered: { id: string; batch: string; first: string }[] = [];
  /** Per fault, what shows it happened (or why it did not). */
  const evidence = new Map<Fault, { ok: boolean; what: string }>();
  const prove = (fault: Fault, ok: boolean, what: string) => evidence.set(fault, { ok, what });
  // The functions' log holds this run only (the containers append to it).
  const functionsLog = `${opts.assembly}/e2e-functions.log`;
  writeFileSync(functionsLog, '');
  const emu = await Emulator.deploy({
    assembly: opts.assembly,
    stack: E2E_STACK_NAME,
    // Visibility timeouts pass faster (120×: 6 min → 3 s); function timeouts and backoffs are real.
    timeScale: opts.timeScale,
    extraEnv: { VARVE_E2E_STATE_DIR: opts.stateDir, POWERTOOLS_LOG_LEVEL: 'WARN', POWERTOOLS_METRICS_DISABLED: 'true' },
    logFile: functionsLog,
    onLog: (_fn, line) => {
      if (!line.startsWith('{"e2e":"change"')) return;
      const c = JSON.parse(line) as { id: string; v: string; tag: string };
      delivered.push({ id: c.id, v: Number(c.v), tag: c.tag });
    },
    faults: {
      // The same messages come back, in other batch compositions, after their visibility lapses.
      loseDelete: (mapping, messages) => {
        if (!/IngestSqsEventSource/.test(mapping.logicalId)) return false;
        const batch = messages
          .map((m) => m.MessageId!)
          .sort()
          .join(',');
        // A message whose delete was lost, back in a batch: evidence of the redelivery and its composition.
        for (const m of messages)
          if (lostDeleteIds.has(m.MessageId!))
            redelivered.push({ id: m.MessageId!, batch, first: firstBatch.get(m.MessageId!)! });
        if (!loseDeletes) return false;
        const fresh = messages.filter((m) => !lostDeleteIds.has(m.MessageId!));
        if (fresh.length === 0) return false;
        for (const m of fresh) {
          lostDeleteIds.add(m.MessageId!);
          firstBatch.set(m.MessageId!, batch);
        }
        return true;
      },
      failInvocation: (mapping, messages) => deadLetter.fail(mapping, messages),
    },
  });
  const fnId = (re: RegExp) =>
    functionsOf(emu.template).find((f) => re.test(f.logicalId) && emu.functions.has(f.logicalId))!.logicalId;
  const queueId = (re: RegExp) => emu.queues().find((q) => re.test(q))!;
  const ingestFn = fnId(/Ingest/);
  const env = emu.envOf(ingestFn);
  const ingestUrl = emu.ref(queueId(/IngestQueue(?!Dlq)/));
  const commitUrl = env.VARVE_COMMIT_QUEUE_URL;
  const s3 = new S3Client({ forcePathStyle: true });
  const sqs = new SQSClient({});

  // The operator creates the table (docs/AWS.md step 6); not a function, not audited.
  const orders = await openCatalog(env.VARVE_WAREHOUSE, env).createTable('shop.orders', {
    fields: parseSchemaText('id BIGINT, v BIGINT, status STRING'),
    primaryKeys: ['id'],
    options: {
      bucket: '4',
      'num-sorted-run.compaction-trigger': '3',
      'snapshot.num-retained.min': '3',
      'snapshot.num-retained.max': '6',
      'snapshot.time-retained': '1 s',
    },
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
      await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: ingestUrl,
          Entries: bodies.slice(i, i + 10).map((b, k) => ({ Id: String(k), MessageBody: b })),
        }),
      );
    }
  };
  const quiet = async (what: string, queues: RegExp, limitMs = opts.settleMs) => {
    const ids = emu.queues().filter((q) => queues.test(q) && !/Dlq|Rejects/.test(q));
    const until = Date.now() + limitMs;
    let calm = 0;
    while (Date.now() < until) {
      // Work in flight is known here; the queues are asked only when there is none.
      const busy = emu.mappings.some((m) => m.inFlight > 0) || emu.pendingAsync > 0;
      const empty = !busy && (await Promise.all(ids.map((q) => emu.depth(q)))).every((d) => d === 0);
      calm = empty ? calm + 1 : 0;
      if (calm >= 3) return;
      await sleep(400);
    }
    log(`warning: ${what} did not settle within ${limitMs / 1000} s`);
  };

  const faultRound = new Map<Fault, number>();
  const inboxFiles = new Set<string>();
  emu.start();
  const started = Date.now();
  try {
    const KEYS = 24;
    for (let round = 0; round < rounds; round++) {
      const ids = Array.from({ length: 8 }, (_, k) => ((round * 5 + k * 3) % KEYS) + 1);
      const recs = ids.map((id) => next(id));
      const bodies = [JSON.stringify(recs.slice(0, 3)), ...recs.slice(3).map((r) => JSON.stringify(r))];
      const fault = round % (FAULTS.length + 1);
      if (fault < FAULTS.length && !faultRound.has(FAULTS[fault])) faultRound.set(FAULTS[fault], round);
      if (fault === 0) {
        bodies.push(JSON.stringify({ id: 'not-a-number', v: 1, status: 'poison' }), 'this is not JSON');
      }
      if (fault === 2) {
        const r = next(100 + round, `fail3:r${round}`);
        bodies.push(JSON.stringify(r));
      }
      if (fault === 3) {
        bodies.push(JSON.stringify(next(100 + round, `slow:r${round}`)));
      }
      if (fault === 5) {
        loseDeletes = true;
      }
      if (fault === 6) {
        bodies.push(JSON.stringify([next(200 + round), next(300 + round, `crash:r${round}`)]));
      }
      if (fault === 3 || fault === 7) {
        // Lambda recycles idle containers: the ingest and commit functions start cold again on a
        // table with history, whose requests the cold request report judges (cold-requests.ts).
        const retired = [/Ingest/, /Commit/].map((re) => emu.functions.get(fnId(re))!.retireIdle());
        log(`retired the idle containers of the ingest (${retired[0]}) and commit (${retired[1]}) functions`);
      }
      const injectedBefore = emu.injected();
      if (fault === 9) emu.setFaults({ ...FAULT_ROUND_RATES, seed: opts.seed });
      await sendRecords(bodies);
      if (fault === 1) {
        // A commit message no commit can make sense of, at the head of the table's one group,
        // with good work right behind it.
        await sqs.send(
          new SendMessageCommand({
            QueueUrl: commitUrl,
            MessageBody: '{"version":1,"table":"shop.orders","files":"garbage"}',
            MessageGroupId: 'shop.orders',
            MessageDeduplicationId: `poison-${round}`,
          }),
        );
      }
      if (fault === 4) {
        // One file dropped in the inbox; EventBridge delivers its Object Created event twice.
        const key = `${env.VARVE_WAREHOUSE.split('/').slice(3).join('/')}/inbox/shop/orders/round-${round}.jsonl`;
        const lines = [next(400 + round), next(401 + round)].map((r) => JSON.stringify(r)).join('\n');
        const put = await s3.send(
          new PutObjectCommand({ Bucket: emu.deployment.bucket, Key: key, Body: `${lines}\n` }),
        );
        inboxFiles.add(objectSource(key, put.ETag!));
        const detail = {
          version: '0',
          bucket: { name: emu.deployment.bucket },
          object: { key, size: lines.length + 1, etag: put.ETag!.replace(/"/g, ''), sequencer: '0' },
          'request-id': 'e2e',
          requester: 'e2e',
          reason: 'PutObject',
        };
        await emu.putEvent('default', 'aws.s3', 'Object Created', detail);
        await emu.putEvent('default', 'aws.s3', 'Object Created', detail);
      }
      if (fault === 7) {
        // Two discovery runs at once: the schedule and a second trigger in the same instant.
        emu.fireSchedule(/DiscoverSchedule/);
        emu.fireSchedule(/DiscoverSchedule/);
      }
      const discoverMapping = emu.mappings.find((m) => /DiscoverSqsEventSource/.test(m.spec.logicalId))!;
      const discoverBefore = discoverMapping.records;
      const roundStart = Date.now();
      // The first round waits for every function's first cold start too.
      await quiet(`round ${round} ingestion`, /Ingest|Commit/, round === 0 ? 2 * opts.settleMs : opts.settleMs);
      const ingestedMs = Date.now() - roundStart;
      loseDeletes = false;
      if (fault === 8) {
        const r = await redriveRound({
          emu,
          sqs,
          env,
          commitUrl,
          round,
          ids,
          next,
          sendRecords,
          quiet,
          deadLetter,
          log,
        });
        for (const v of r.superseded) superseded.add(v);
        prove('commit dead-lettered, newer batch committed, then redriven', r.ok, r.what);
      }
      if (fault === 4) {
        const file = [...inboxFiles].at(-1)!;
        let n = 0;
        // The inbox path (EventBridge → ingest → commit queue) may still be committing on a slow machine.
        for (let i = 0; i < 20 && n === 0; i++) {
          if (i > 0) await sleep(1000);
          n = (await snapshotsHolding(orders, [file])).get(file) ?? 0;
        }
        prove(
          'duplicate inbox event',
          n === 1,
          `the file's source ${file} is in ${n} snapshot(s), after 2 Object Created events`,
        );
      }
      if (fault === 5) {
        const ids = [...lostDeleteIds];
        const holders = await snapshotsHolding(orders, ids.map(messageSource));
        const twice = ids.filter((id) => (holders.get(messageSource(id)) ?? 0) > 1);
        const moved = redelivered.filter((r) => r.batch !== r.first).length;
        prove(
          'redelivery in other batch compositions',
          ids.length > 0 && redelivered.length >= ids.length && moved > 0 && twice.length === 0,
          `${ids.length} messages' deletes lost, ${redelivered.length} redeliveries (${moved} in another batch composition), ${twice.length} committed twice`,
        );
      }
      if (fault === 7) {
        const n = discoverMapping.records - discoverBefore;
        prove(
          'discovery triggered twice at once',
          n >= 2,
          `${n} discovery triggers handled by the discovery function (both sent in the same instant)`,
        );
      }
      emu.fireSchedule(/DiscoverSchedule/);
      if (round % 4 === 3) emu.fireSchedule(/ExpireSchedule/);
      await quiet(`round ${round} delivery`, /./);
      if (fault === 9) {
        emu.setFaults(undefined);
        const after = emu.injected();
        const n = {
          conflicts: after.conflicts - injectedBefore.conflicts,
          slowDowns: after.slowDowns - injectedBefore.slowDowns,
          throttles: after.throttles - injectedBefore.throttles,
        };
        prove(
          'S3 409 / 503 SlowDown and Lambda throttling',
          n.conflicts > 0 && n.slowDowns > 0 && n.throttles > 0,
          `${n.conflicts} S3 409 ConditionalRequestConflict and ${n.slowDowns} S3 503 SlowDown answers injected in the containers, ${n.throttles} invocations refused with TooManyRequestsException (rates ${JSON.stringify(FAULT_ROUND_RATES)}, seed ${opts.seed})`,
        );
      }
      log(
        `round ${round + 1}/${rounds} (${fault < FAULTS.length ? FAULTS[fault] : 'no fault'}): ingested in ${(ingestedMs / 1000).toFixed(1)} s, ` +
          `delivered in ${((Date.now() - roundStart - ingestedMs) / 1000).toFixed(1)} s; ${delivered.length} changes delivered so far, ${Math.round((Date.now() - started) / 1000)} s`,
      );
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
      if (superseded.has(`${id}/${v}`)) continue;
      total++;
      if (!seen.has(`${id}/${v}`)) lost.push(`${id}/${v}`);
    }
  }
  const deliveredDistinct = total - lost.length;
  const stale = await staleWins(orders, expected);
  let dlq = 0;
  const dlqs: string[] = [];
  for (const q of emu.queues().filter((q) => /Dlq/.test(q))) {
    const n = await emu.depth(q);
    dlq += n;
    if (n > 0) {
      dlqs.push(`${q} ${n}`);
      for (const m of await receiveMessages(sqs, emu.ref(q), 3))
        log(
          `dead letter in ${q} (received ${m.Attributes?.ApproximateReceiveCount} times): ${(m.Body ?? '').slice(0, 400)}`,
        );
    }
  }

  // Evidence of the faults the function logs and queues keep.
  const rejects = await drainQueue(sqs, emu.ref(queueId(/Rejects/)));
  const rejected = (needle: string) => rejects.filter((r) => r.includes(needle)).length;
  prove(
    'poison record',
    rejected('not-a-number') >= 1 && rejected('this is not JSON') >= 1,
    `rejects queue: ${rejected('not-a-number')} invalid record, ${rejected('this is not JSON')} non-JSON body`,
  );
  prove(
    'poison commit message',
    rejected('garbage') >= 1,
    `rejects queue: ${rejected('garbage')} poison commit message (${rejects.length} rejects in all)`,
  );
  const reader = emu.functions.get(fnId(/Read/))!;
  // The row carrying a sink fault reached the sink in the end (its tag is the round that sent it).
  const tagged = (f: Fault) => faultRound.has(f) && delivered.some((d) => d.tag === `r${faultRound.get(f)}`);
  const fail3 = readdirOrEmpty(opts.stateDir)
    .filter((f) => f.startsWith('fault-fail3'))
    .map((f) => Number(readFileSync(path.join(opts.stateDir, f), 'utf8')));
  prove(
    'sink fails 3 times then succeeds',
    fail3.length > 0 && fail3.every((n) => n >= 4) && tagged('sink fails 3 times then succeeds'),
    `sink attempts ${fail3.join(', ') || 'none'}, then delivered`,
  );
  prove(
    'sink slower than its timeout',
    reader.timeouts >= 1 && tagged('sink slower than its timeout'),
    `${reader.timeouts} reader invocation(s) stopped at the ${reader.spec.timeoutSeconds}-s timeout, then delivered`,
  );
  prove(
    'handler crash mid-batch',
    reader.crashes >= 1 && tagged('handler crash mid-batch'),
    `${reader.crashes} reader runtime(s) died mid-batch, then delivered`,
  );
  const audit = await emu.audit.evaluate();

  log(
    `${audit.calls} AWS calls audited (${audit.checks} distinct authorisations) from ${emu.functions.size} functions`,
  );
  const oversized: string[] = [];
  const failedInit: string[] = [];
  for (const [fn, f] of emu.functions) {
    const zipped = zippedBundleBytes(path.dirname(f.spec.bundle));
    if (zipped > MAX_ZIPPED_BYTES) oversized.push(fn);
    if (f.initErrors > 0) failedInit.push(fn);
    log(
      `${fn}: deployment package ${(zipped / 1048576).toFixed(2)} MB zipped (limit ${MAX_ZIPPED_BYTES / 1048576} MB)`,
    );
    const cold = f.stats.map((s) => s.coldStartMs);
    const spawn = f.stats.map((s) => s.spawnMs);
    log(
      `${fn}: ${f.invocations} invocations, ${gbSeconds(f)}, ${f.errors} failed (${f.timeouts} timed out, ${f.crashes} crashed, ${f.initErrors} failed init), ${f.throttled} refused (throttled), S3 answers injected: ${f.injected.get('ConditionalRequestConflict') ?? 0} 409, ${f.injected.get('SlowDown') ?? 0} 503; ${f.stats.length} containers, cold start (module load + wasm init) ` +
        `median ${median(cold).toFixed(0)} ms, max ${Math.max(0, ...cold).toFixed(0)} ms; process start to ready median ${median(spawn).toFixed(0)} ms; memory ${f.spec.memoryMb} MB, timeout ${f.spec.timeoutSeconds} s`,
    );
  }
  const coldRequests = coldRequestReport(emu.functions);
  for (const l of coldRequests.lines) log(l);
  for (const l of coldRequests.failures) log(`OVER THE COLD REQUEST BUDGET: ${l}`);
  for (const m of emu.mappings)
    log(
      `${m.spec.logicalId}: ${m.batches} batches, ${m.failedBatches} failed whole, ${m.partialFailures} with partial failures, ${m.throttledInvocations} throttled invocations retried, ${m.throttleDrops} batches dropped back to the queue by throttling`,
    );
  log(
    `async invocations that exhausted their retries: ${emu.asyncFailures}, throttled and tried again: ${emu.asyncThrottles}; dead-letter queues: ${dlqs.join(', ') || 'all empty'}`,
  );
  const missing = FAULTS.filter((f) => !evidence.get(f)?.ok);
  for (const f of FAULTS)
    log(
      `fault ${evidence.get(f)?.ok ? 'exercised' : 'NOT EXERCISED'}: ${f}: ${evidence.get(f)?.what ?? `no round injected it (${rounds} rounds; ${FAULTS.length} are needed)`}`,
    );
  if (lost.length) log(`LOST (id/version): ${lost.slice(0, 30).join(' ')}${lost.length > 30 ? ' …' : ''}`);
  log(
    `the table holds ${stale.rows} rows; ${stale.wins.length} key(s) not at the version sent last${stale.wins.length ? ` (id: holds/sent last): ${stale.wins.slice(0, 30).join(' ')}` : ''}`,
  );
  const injected = emu.injected();
  if (audit.denials.length) log(`IAM DENIALS: ${formatDenials(audit.denials).replace(/\n/g, ' | ')}`);
  log(`took ${Math.round((Date.now() - started) / 1000)} s`);
  const line = `e2e: changes delivered ${deliveredDistinct}/${total}, duplicates ${duplicates}, order violations ${orderViolations}, lost ${lost.length}, stale wins ${stale.wins.length}, IAM denials ${audit.denials.length}, dlq ${dlq}; injected S3 409 ${injected.conflicts}, S3 503 ${injected.slowDowns}, Lambda throttles ${injected.throttles}`;
  return {
    line,
    ok:
      lost.length === 0 &&
      orderViolations === 0 &&
      stale.wins.length === 0 &&
      audit.denials.length === 0 &&
      missing.length === 0 &&
      oversized.length === 0 &&
      failedInit.length === 0 &&
      coldRequests.failures.length === 0,
  };
}

/**
 * The keys of `table` whose row is not the version sent last (`id: holds/sent`; a missing row
 * holds '-'), read from the table's latest snapshot.
 */
async function staleWins(table: Table, expected: Map<string, number[]>): Promise<{ rows: number; wins: string[] }> {
  const t = await readTable(table);
  const ids = [...t.getChild('id')!.toArray()];
  const versions = [...t.getChild('v')!.toArray()];
  const held = new Map(ids.map((id, i) => [String(id), Number(versions[i])]));
  const wins: string[] = [];
  for (const [id, vs] of expected) {
    const last = vs[vs.length - 1];
    if (held.get(id) !== last) wins.push(`${id}: ${held.get(id) ?? '-'}/${last}`);
  }
  return { rows: t.numRows, wins };
}

/** How many snapshots of `table` (of those still there) name each of `sources` in their varve.sources. */
async function snapshotsHolding(table: Table, sources: readonly string[]): Promise<Map<string, number>> {
  const wanted = new Set(sources);
  const counts = new Map<string, number>();
  for (const id of await table.snapshots.listIds()) {
    const s = await table.snapshots.tryRead(id);
    const list = s?.properties?.[SOURCES_PROPERTY];
    if (!list) continue;
    for (const src of JSON.parse(list) as string[]) if (wanted.has(src)) counts.set(src, (counts.get(src) ?? 0) + 1);
  }
  return counts;
}

/** Every message body of a queue nothing consumes (the rejects queue), deleted as read. */
async function drainQueue(sqs: SQSClient, url: string): Promise<string[]> {
  const bodies: string[] = [];
  for (;;) {
    const messages = await receiveMessages(sqs, url, 10);
    if (messages.length === 0) return bodies;
    bodies.push(...messages.map((m) => m.Body ?? ''));
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: url,
        Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
      }),
    );
  }
}

/** The deployment-package limit scripts/bundle-size.ts holds the bundles to (Lambda itself takes 50 MB). */
const MAX_ZIPPED_BYTES = 3 * 1024 * 1024;

/** The size of a function's asset folder (bundle and wasm) as a ZIP archive, deflated at level 9 as `zip -9` does. */
function zippedBundleBytes(dir: string): number {
  let bytes = 22; // end of central directory
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    if (!statSync(file).isFile()) continue;
    // Local header (30) and central directory entry (46), each with the name, plus the data.
    bytes += 76 + 2 * Buffer.byteLength(name) + deflateRawSync(readFileSync(file), { level: 9 }).length;
  }
  return bytes;
}

/**
 * A function's Lambda compute: GB-s by the invocations' wall clock (what Lambda bills, on this
 * machine's load) and by their CPU time plus 20 ms per AWS request the function's code made (the
 * mapping's polls are not its; docs/AWS.md's cost model),
 * with the per-invocation means behind them.
 */
function gbSeconds(f: {
  spec: { memoryMb: number };
  invocations: number;
  durationMs: number;
  cpuMs: number;
  sdkCalls: number;
}): string {
  const calls = f.sdkCalls;
  const gb = f.spec.memoryMb / 1024;
  const n = Math.max(1, f.invocations);
  const modelMs = f.cpuMs + 20 * calls;
  return `wall ${((f.durationMs / 1000) * gb).toFixed(1)} GB-s (${(f.durationMs / n).toFixed(0)} ms per invocation), CPU + 20 ms per request ${((modelMs / 1000) * gb).toFixed(1)} GB-s (${(f.cpuMs / n).toFixed(0)} ms CPU and ${(calls / n).toFixed(1)} requests per invocation)`;
}

function readdirOrEmpty(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir) : [];
}

function median(xs: number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}
