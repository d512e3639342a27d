/**
 * Benchmark 5, commits: throughput with 1, 4 and 16 concurrent writers on one table (in-process:
 * each writer is an async loop of write + commit, all in this process, so the commit protocol's
 * object-store races are real while CPU work is serialised), commit latency, and object-store
 * requests per commit counted by a wrapper. On S3 (moto) too when AWS_ENDPOINT_URL is set.
 */
import { randomUUID } from 'node:crypto';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { CommitRetriesExhaustedError } from '../../lib/errors.js';
import { LocalStore } from '../../lib/store/local-store.js';
import type { ObjectStore } from '../../lib/store/object-store.js';
import { S3Store } from '../../lib/store/s3-store.js';
import type { Table } from '../../lib/table/table.js';
import { makeRows, range } from '../lib/data.js';
import { assertChecksum, assertEqual, expectedChecksum, tableChecksum } from '../lib/checksum.js';
import { type AwsRequestCounts, countAwsRequests } from '../lib/aws-requests.js';
import { CountingStore, keyKind } from '../lib/counting-store.js';
import { quantile, statsOf } from '../lib/harness.js';
import type { Measurement, Ratio, SuiteContext, SuiteResult, TableSpec } from '../lib/results.js';
import { createBenchTable, freshDir, openBenchTable } from '../lib/tables.js';
import { runChild } from '../lib/child.js';
import { firstKey } from './commit-process-child.js';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sleep } from '../../lib/store/backoff.js';

/** Rows per commit: a small streaming micro-batch, spread over the 4 buckets. */
const ROWS_PER_COMMIT = 16;

interface RoundResult {
  commits: number;
  gaveUp: number;
  latencies: number[];
  elapsedMs: number;
  attempts: number;
  requests: number;
  /** The round's requests by `op kind` (taken before anything else reads the table). */
  counts: Map<string, number>;
  /** The round's S3 requests counted by the SDK middleware, when on S3. */
  sdkCounts?: Map<string, number>;
}

/**
 * `writers` async loops committing until `durationMs` has passed; keys come from a shared counter.
 * `identified`: each commit carries its own commit identifier (indexed, deduplicated table-wide);
 * otherwise a plain commit (a fresh identifier nothing can have landed under).
 */
async function commitRound(
  table: Table,
  counting: CountingStore,
  writers: number,
  durationMs: number,
  nextKey: { value: number; lost: number[] },
  sdk?: AwsRequestCounts,
  identified = true,
): Promise<RoundResult> {
  counting.reset();
  sdk?.reset();
  const latencies: number[] = [];
  let commits = 0;
  let gaveUp = 0;
  const started = performance.now();
  const deadline = started + durationMs;
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      const user = `writer-${w}`;
      while (performance.now() < deadline) {
        const first = nextKey.value;
        nextKey.value += ROWS_PER_COMMIT;
        const input = makeRows(range(ROWS_PER_COMMIT, first), 0);
        const t0 = performance.now();
        const writer = table.newWriter({ commitUser: user });
        try {
          await writer.writeArrow(input);
          await writer.commit(identified ? `${user}-${first}` : undefined);
          latencies.push(performance.now() - t0);
          commits++;
        } catch (e) {
          // Gave up after commit.max-retries lost races: the rows are not in the table.
          if (!(e instanceof CommitRetriesExhaustedError)) throw e;
          gaveUp++;
          nextKey.lost.push(first);
        } finally {
          await writer.close();
        }
      }
    }),
  );
  const elapsedMs = performance.now() - started;
  const attempts = [...counting.counts.entries()]
    .filter(([k]) => k === 'putIfAbsent snapshot')
    .reduce((s, [, v]) => s + v, 0);
  return {
    commits,
    gaveUp,
    latencies,
    elapsedMs,
    attempts,
    requests: counting.total,
    counts: new Map(counting.counts),
    sdkCounts: sdk ? new Map(sdk.counts) : undefined,
  };
}

/** Raw conditional-put latency of the store: create-only puts of small new objects, one at a time. */
async function rawPutIfAbsent(store: ObjectStore, n: number): Promise<number[]> {
  const body = new TextEncoder().encode('{"snapshot":"x"}'.repeat(20));
  const out: number[] = [];
  const prefix = `raw-${randomUUID()}`;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await store.putIfAbsent(`${prefix}/obj-${i}`, body);
    out.push(performance.now() - t0);
    assertEqual('commit: raw create-only put created its object', r !== undefined, true);
  }
  return out;
}

async function s3Bucket(): Promise<string> {
  const name = `varve-bench-${randomUUID().slice(0, 8)}`;
  const s3 = new S3Client({ forcePathStyle: true });
  await s3.send(new CreateBucketCommand({ Bucket: name }));
  s3.destroy();
  return name;
}

/** Runs the rounds on one store; returns measurements, the request table and the ratio (`sdk`: the SDK-level count of an S3 store's requests). */
async function runOnStore(
  ctx: SuiteContext,
  label: string,
  inner: ObjectStore,
  writerCounts: number[],
  durationMs: number,
  reps: number,
  sdk?: AwsRequestCounts,
) {
  const counting = new CountingStore(inner);
  const table = await createBenchTable(counting, `commits_${label.replace(/\W/g, '')}`);
  const nextKey = { value: 0, lost: [] as number[] };
  const measurements: Measurement[] = [];
  const rows: TableSpec['rows'] = [];
  // Warm-up: code paths and the table's first snapshots.
  await commitRound(table, counting, 1, Math.min(1000, durationMs), nextKey);
  // Requests per warm 1-writer commit, by commit variant: counted inside the round, so the
  // bench's own lookups around a round (table.snapshots.latest()) are not in them.
  const perCommit: PerCommit[] = [];
  let oneWriterLatency: number[] = [];
  for (const writers of writerCounts) {
    const throughput: number[] = [];
    const latencies: number[] = [];
    let commits = 0;
    let gaveUp = 0;
    let attempts = 0;
    let requests = 0;
    let snapshots = 0;
    for (let r = 0; r < reps; r++) {
      const before = (await table.snapshots.latest())!.id;
      const res = await commitRound(table, counting, writers, durationMs, nextKey, sdk);
      const after = (await table.snapshots.latest())!.id;
      // Writers of one process share a committer (lib/table/shared-committer.ts): a snapshot holds
      // one or more commits, never none, and nothing else committed meanwhile.
      assertEqual(
        `commit (${label}, ${writers} writers): new snapshots ≤ commits`,
        after - before <= res.commits && (res.commits === 0 || after > before),
        true,
      );
      snapshots += after - before;
      if (writers === 1 && r === reps - 1) perCommit.push(perCommitOf('identified', res));
      throughput.push((res.commits / res.elapsedMs) * 1000);
      latencies.push(...res.latencies);
      commits += res.commits;
      gaveUp += res.gaveUp;
      attempts += res.attempts;
      requests += res.requests;
      ctx.log(
        `commit (${label}): ${writers} writers, ${res.commits} commits in ${after - before} snapshots in ${(res.elapsedMs / 1000).toFixed(1)} s (${throughput[throughput.length - 1].toFixed(1)}/s), ${res.gaveUp} gave up`,
      );
    }
    if (writers === 1) oneWriterLatency = latencies;
    const sorted = [...latencies].sort((a, b) => a - b);
    measurements.push({
      id: `${label}-throughput-${writers}`,
      label: `${label}: commits/s with ${writers} writer${writers > 1 ? 's' : ''}`,
      unit: 'commits/s',
      stats: statsOf(throughput),
      params: { writers },
    });
    measurements.push({
      id: `${label}-latency-${writers}`,
      label: `${label}: commit latency with ${writers} writer${writers > 1 ? 's' : ''}`,
      unit: 'ms',
      stats: statsOf(latencies),
      params: { writers },
    });
    rows.push([
      label,
      writers,
      statsOf(throughput).median.toFixed(1),
      (commits / Math.max(1, snapshots)).toFixed(2),
      quantile(sorted, 0.5).toFixed(1),
      quantile(sorted, 0.99).toFixed(1),
      (attempts / Math.max(1, snapshots)).toFixed(2),
      gaveUp,
      (requests / Math.max(1, commits)).toFixed(1),
    ]);
  }
  // The same 1-writer round with plain commits (no commit identifier): only the request counts.
  const plain = await commitRound(table, counting, 1, durationMs, nextKey, sdk, false);
  perCommit.unshift(perCommitOf('plain', plain));
  measurements.push({
    id: `${label}-latency-1-plain`,
    label: `${label}: commit latency with 1 writer, plain commits (no identifier)`,
    unit: 'ms',
    stats: statsOf(plain.latencies),
    params: { writers: 1 },
  });
  ctx.log(
    `commit (${label}): 1 writer, plain commits: ${plain.commits} commits in ${(plain.elapsedMs / 1000).toFixed(1)} s`,
  );
  // Every committed row is in the table; rows of commits that gave up are not.
  const lost = new Set<number>();
  for (const first of nextKey.lost) for (let i = 0; i < ROWS_PER_COMMIT; i++) lost.add(first + i);
  const kept = range(nextKey.value).filter((k) => !lost.has(k));
  assertChecksum(
    `commit (${label}): table after all rounds`,
    tableChecksum(await table.read()),
    expectedChecksum(kept, 0),
  );

  const raw = await rawPutIfAbsent(inner, ctx.quick ? 50 : 200);
  const rawStats = statsOf(raw);
  const oneStats = statsOf(oneWriterLatency);
  measurements.push({
    id: `${label}-raw-put`,
    label: `${label}: one create-only put (putIfAbsent) of a small object`,
    unit: 'ms',
    stats: rawStats,
  });
  const ratio: Ratio = {
    id: `${label}-commit-vs-put`,
    label: `${label}: 1-writer commit latency ÷ one create-only put`,
    value: oneStats.median / rawStats.median,
    min: oneStats.min / rawStats.median,
    max: oneStats.max / rawStats.median,
  };
  return { measurements, rows, perCommit, ratio };
}

/** Requests per commit of one 1-writer round: by the counting store, and by the SDK on S3. */
interface PerCommit {
  variant: 'plain' | 'identified';
  store: Record<string, number>;
  sdk?: Record<string, number>;
}

function perCommitOf(variant: PerCommit['variant'], res: RoundResult): PerCommit {
  const per = (m: Map<string, number>) =>
    Object.fromEntries([...m.entries()].map(([k, v]) => [k, v / Math.max(1, res.commits)]));
  return { variant, store: per(res.counts), sdk: res.sdkCounts ? per(res.sdkCounts) : undefined };
}

/** The request class of a counted request: an S3 command (SDK count) or an ObjectStore operation (counting store). */
function requestClass(op: string): 'PUT' | 'GET' | 'HEAD' | 'LIST' | undefined {
  if (op.startsWith('PutObject') || op === 'put' || op === 'putIfAbsent' || op === 'putIfMatch') return 'PUT';
  if (op === 'GetObject' || op === 'get' || op === 'getRange') return 'GET';
  if (op === 'HeadObject' || op === 'head') return 'HEAD';
  if (op.startsWith('ListObjects') || op === 'list') return 'LIST';
  return undefined;
}

/**
 * The issue's goal per warm append commit, beside its data files: request class → most allowed
 * (by variant). An identified commit's 4th metadata PUT is its identifier's claim, which keeps
 * "idempotence without a window" (lib/snapshot/commit-identifier.ts): the index must name the
 * snapshot id before that snapshot is created, so that a retry in another process, however many
 * commits later, settles with O(1) reads whether it landed; written after the snapshot it cannot
 * tell a crashed attempt from a landed one (what older varve versions met as
 * CommitIdentifierAmbiguousError). Folding it into another object would need the manifest list's
 * key derived from the identifier and its lifetime tied to the index's, not the snapshot's.
 */
const COMMIT_GOAL: Array<
  [string, (cls: string | undefined, kind: string) => boolean, Record<PerCommit['variant'], number>]
> = [
  ['metadata PUTs (any put of a non-data object)', (c, k) => c === 'PUT' && k !== 'data', { plain: 3, identified: 4 }],
  ['GETs', (c) => c === 'GET', { plain: 2, identified: 2 }],
  ['HEADs', (c) => c === 'HEAD', { plain: 1, identified: 1 }],
  ['LISTs', (c) => c === 'LIST', { plain: 0, identified: 0 }],
];

/** Requests per commit against the goal: rows of [class, measured per commit, goal, verdict]. */
function goalRows(variant: PerCommit['variant'], perCommit: Record<string, number>): Array<Array<string | number>> {
  return COMMIT_GOAL.map(([name, matches, goal]) => {
    const most = goal[variant];
    let n = 0;
    for (const [key, v] of Object.entries(perCommit)) {
      const [op, kind] = key.split(' ');
      if (matches(requestClass(op), kind ?? '')) n += v;
    }
    const why = variant === 'identified' && most !== goal.plain ? " (3 + the identifier's claim)" : '';
    return [name, n.toFixed(2), `≤ ${most}${why}`, n <= most + 1e-9 ? 'met' : '**misses**'];
  });
}

interface ProcessResult {
  doneMs: number;
  commits: number;
  gaveUp: number;
  attempts: number;
  lost: number[];
}

/**
 * `processes` OS processes × `commits` commits each on one table in a local folder, started
 * together: each process has its own committer, so they race for snapshot ids and retry with
 * jittered exponential backoff. Returns per-process completion times and what gave up.
 */
async function runProcesses(
  ctx: SuiteContext,
  processes: number,
  commits: number,
): Promise<{ results: ProcessResult[]; snapshots: number }> {
  const dir = await freshDir(ctx.tmp, 'commit-procs');
  const table = await createBenchTable(new LocalStore(join(dir, 'warehouse')), 'procs');
  const children = Array.from({ length: processes }, (_, i) =>
    runChild<ProcessResult>('bench/suites/commit-process-child.ts', [
      dir,
      String(i),
      String(commits),
      String(ROWS_PER_COMMIT),
    ]),
  );
  // The start line: every process has opened the table and warmed up.
  const ready = async () => (await readdir(dir)).filter((f) => f.startsWith('ready-')).length;
  const failed = Promise.race(children).then(
    () => undefined,
    (e: unknown) => e,
  );
  for (;;) {
    if ((await ready()) === processes) break;
    const early = await Promise.race([failed, sleep(50).then(() => 'waiting' as const)]);
    if (early !== 'waiting' && early !== undefined) throw early;
  }
  await writeFile(join(dir, 'go'), '');
  const results = await Promise.all(children);
  // Every commit that did not give up is in the table exactly once; the others' rows are absent.
  const lost = new Set<number>();
  for (const r of results) for (const first of r.lost) for (let i = 0; i < ROWS_PER_COMMIT; i++) lost.add(first + i);
  const kept: number[] = [];
  for (let p = 0; p < processes; p++)
    for (let c = 0; c < commits; c++)
      for (let i = 0; i < ROWS_PER_COMMIT; i++) {
        const k = firstKey(p, c, ROWS_PER_COMMIT) + i;
        if (!lost.has(k)) kept.push(k);
      }
  const reopened = await openBenchTable(new LocalStore(join(dir, 'warehouse')), 'procs');
  assertChecksum(
    `commit (${processes} processes): table after the race`,
    tableChecksum(await reopened.read()),
    expectedChecksum(kept, 0),
  );
  const snapshots = (await reopened.snapshots.latest())!.id;
  assertEqual(
    `commit (${processes} processes): one snapshot per commit (each process commits alone)`,
    snapshots,
    results.reduce((s, r) => s + r.commits, 0),
  );
  void table;
  return { results, snapshots };
}

/** Runs benchmark 5. */
export async function runCommit(ctx: SuiteContext): Promise<SuiteResult> {
  const writerCounts = [1, 4, 16];
  const durationMs = ctx.quick ? 1000 : 5000;
  const reps = ctx.quick ? 1 : 2;
  const measurements: Measurement[] = [];
  const ratios: Ratio[] = [];
  const summary: TableSpec = {
    title: 'Commit throughput and cost',
    columns: [
      'store',
      'writers',
      'commits/s (median)',
      'commits per snapshot',
      'latency p50 ms',
      'latency p99 ms',
      'attempts per snapshot',
      'gave up',
      'requests per commit',
    ],
    rows: [],
  };
  const breakdown: TableSpec = {
    title:
      'Object-store requests per warm commit, 1 writer (operation and object kind; plain = no commit identifier, identified = with one)',
    columns: ['store', 'commit', 'request', 'per commit'],
    rows: [],
  };
  const sdkTable: TableSpec = {
    title:
      'S3 (moto): HTTP requests per warm 1-writer append commit, counted by an AWS SDK middleware (command and object kind)',
    columns: ['commit', 'request', 'per commit'],
    rows: [],
  };
  const goalTable: TableSpec = {
    title:
      'Per warm append commit against the goal (beside its data files): local counted by the request-counting store, S3 (moto) by the SDK middleware',
    columns: ['store', 'commit', 'requests', 'per commit', 'goal', ''],
    rows: [],
  };
  const stores: Array<[string, ObjectStore, AwsRequestCounts | undefined]> = [
    ['local', new LocalStore(await freshDir(ctx.tmp, 'commit')), undefined],
  ];
  // Installed before the S3 client is made: the middleware is added to clients as they are created.
  const s3Requests = process.env.AWS_ENDPOINT_URL
    ? countAwsRequests((r) =>
        r.service === 'S3' ? `${r.command} ${keyKind(String(r.input.Key ?? r.input.Prefix ?? ''))}` : undefined,
      )
    : undefined;
  try {
    if (s3Requests) stores.push(['s3', new S3Store({ bucket: await s3Bucket(), prefix: 'bench' }), s3Requests]);
    else ctx.log('commit: AWS_ENDPOINT_URL is not set (and moto was not found), S3 (moto) skipped');
    for (const [label, store, sdk] of stores) {
      const r = await runOnStore(ctx, label, store, writerCounts, durationMs, reps, sdk);
      measurements.push(...r.measurements);
      summary.rows.push(...r.rows);
      ratios.push(r.ratio);
      for (const pc of r.perCommit) {
        for (const [k, v] of Object.entries(pc.store).sort()) breakdown.rows.push([label, pc.variant, k, v.toFixed(2)]);
        if (pc.sdk)
          for (const [k, v] of Object.entries(pc.sdk).sort()) sdkTable.rows.push([pc.variant, k, v.toFixed(2)]);
        for (const row of goalRows(pc.variant, pc.sdk ?? pc.store)) {
          goalTable.rows.push([label, pc.variant, ...row]);
          ctx.log(`commit: ${label} per warm ${pc.variant} append commit: ${row.join(' ')}`);
        }
      }
    }
  } finally {
    s3Requests?.remove();
  }
  const inProcess = (w: number) => measurements.find((m) => m.id === `local-throughput-${w}`)!.stats.median;
  const t1 = measurements.find((m) => m.id === 'local-throughput-1')!.stats;
  const t16 = measurements.find((m) => m.id === 'local-throughput-16')!.stats;
  ratios.push({
    id: 'local-16-vs-1-writers',
    label: 'local: commits/s of 16 in-process writers ÷ of 1 writer',
    value: inProcess(16) / inProcess(1),
    min: t16.min / t1.max,
    max: t16.max / t1.min,
    target: 1,
    lowerIsBetter: false,
  });

  // Separate OS processes: no shared committer, so real races and jittered retries.
  const processes = ctx.quick ? 2 : 4;
  const perProcess = ctx.quick ? 10 : 40;
  const procs: TableSpec = {
    title: `${processes} separate processes × ${perProcess} commits each, one table (local folder), started together`,
    columns: ['process', 'commits', 'gave up', 'attempts per commit', 'completion s'],
    rows: [],
  };
  const { results } = await runProcesses(ctx, processes, perProcess);
  results.forEach((r, i) =>
    procs.rows.push([
      i,
      r.commits,
      r.gaveUp,
      (r.attempts / Math.max(1, r.commits)).toFixed(2),
      (r.doneMs / 1000).toFixed(2),
    ]),
  );
  const done = results.map((r) => r.doneMs);
  const gaveUp = results.reduce((s, r) => s + r.gaveUp, 0);
  ctx.log(
    `commit: ${processes} processes × ${perProcess} commits, completion ${done.map((d) => (d / 1000).toFixed(2)).join(' / ')} s, ${gaveUp} gave up`,
  );
  measurements.push({
    id: 'procs-completion',
    label: `${processes} processes × ${perProcess} commits: per-process completion time`,
    unit: 'ms',
    stats: statsOf(done),
    params: { processes, commits: perProcess },
  });
  measurements.push({
    id: 'procs-gave-up',
    label: `${processes} processes × ${perProcess} commits: commits that gave up`,
    unit: 'commits',
    stats: statsOf([gaveUp]),
  });
  ratios.push({
    id: 'procs-spread',
    label: `${processes} processes: slowest ÷ fastest process completion (starvation shows as a large spread)`,
    value: Math.max(...done) / Math.min(...done),
    min: Math.max(...done) / Math.min(...done),
    max: Math.max(...done) / Math.min(...done),
  });
  return {
    id: 'commit',
    title: '5. Commit throughput',
    method: [
      `Writers are in-process async loops on one table (not separate processes): each writes ${ROWS_PER_COMMIT} new rows through writeArrow and commits under its own identifier, as fast as it can, for ${durationMs / 1000} s per round (${reps} round${reps > 1 ? 's' : ''} per writer count, after a 1-writer warm-up). CPU work is serialised on one thread. Writers of one process share one committer (lib/table/shared-committer.ts): the batches waiting when a round starts land in one snapshot, each identifier claimed in its index.`,
      'The table is write-only (no inline compaction) with 4 buckets; each commit writes up to 4 level-0 files; a snapshot holds one or more commits. Throughput = successful writer commits (each one durable in a snapshot when its call returns) / wall time of the round.',
      `Stores: a LocalStore on a temp folder${process.env.AWS_ENDPOINT_URL ? ` and S3 at ${process.env.AWS_ENDPOINT_URL} (moto)` : ''}, each wrapped in a request-counting ObjectStore. "Attempts" = create-only puts of snapshot files per new snapshot (1 = no lost race).`,
      "Where a commit's time goes (--cpu-prof and process.cpuUsage per commit, local): one writer's commit is mostly main-thread CPU — its flush (up to 4 tiny Parquet files: Arrow to IPC, parquet-wasm encode, then per file a temp file, fsync, key lock and rename, about 12 file-system calls on libuv's 4-thread pool) and, once per snapshot, the commit's fold of the touched buckets' live files (checkAppendFiles), manifests and snapshot — and for the rest waits on those file-system calls. Several writers overlap the waiting, so 16 writers are bound by the one thread's CPU per commit and the pool's file-system calls: they beat 1 only by the per-snapshot work they share and the I/O they overlap. Each writer's flush is still its own (fsyncs per commit: 8 with 1 writer, about 5.5 with 16: its 4 data files plus the snapshot's 4 metadata puts shared by the round). Until the tenth landing each writer's write-stall check (num-sorted-run.stop-trigger, before the commit) also folded the table's live files against the same snapshot as the other writers of the round — a cost growing with the table, paid per writer rather than per snapshot (about 2 ms of the 17 ms of main-thread CPU per commit with 16 writers on a table of about 1,000 commits); now a bucket's sorted runs in a snapshot are counted once per table object and shared (lib/maintenance/compact-trigger.ts sortedRunsOf).",
      'Ratio: the median 1-writer commit latency in units of one bare create-only put of a small object on the same store (the floor of any commit: the put that publishes the snapshot).',
      "On S3 (moto, started by the bench unless AWS_ENDPOINT_URL names one) the requests of the last 1-writer round are also counted by an AWS SDK middleware on the S3Store's client (bench/lib/aws-requests.ts): every HTTP request sent, SDK retries included, by command (a create-only put is PutObject(if-none-match), a compare-and-swap PutObject(if-match)) and object kind, divided by the round's commits. The throughput rounds commit with a commit identifier each, so the identifier index's claim (a create-only put, before the snapshot) is in their count (identifier-index): the \"identified\" rows. The index is marked later by expiry, inside its journal, not by the commit.",
      "Requests per commit are counted inside the round (the bench's own lookups of the latest snapshot around a round are not in them), for the last 1-writer round with identifiers (\"identified\") and for one more 1-writer round of plain commits without an identifier (\"plain\"), both on a warm writer. A warm commit never writes the LATEST hint (lib/snapshot/snapshot-manager.ts). Every manifest.merge-min-count (30) commits one commit merges the base's small manifests into one (Paimon's ManifestFileMerger) and appends its own new entries to that merged manifest (lib/manifest/merge.ts encodeMergeWithDelta), so it writes one manifest like any other commit: a plain commit above 3 metadata PUTs is a regression. An identified commit's aim is 4 metadata PUTs, 3 plus its identifier's claim (a create-only put of commit/identifier-<hash> naming the snapshot id before the snapshot is created): that claim is what lets a retry in any process, however many commits later, tell with O(1) reads whether its commit landed (lib/snapshot/commit-identifier.ts), where Paimon scans recent snapshots; written after the snapshot instead, a crashed attempt could not be told from a landed one. The group commit on AWS is identified the same way (one claim per invocation, test/functions/cold-invocation-requests.test.ts).",
    ],
    checks: [
      'Each round: at least one and at most as many new snapshots as successful commits.',
      'After all rounds: the table reads back to exactly the rows of the successful commits (checksum); rows of commits that gave up are absent.',
    ],
    measurements,
    ratios,
    tables: [summary, procs, breakdown, ...(sdkTable.rows.length ? [sdkTable] : []), goalTable],
  };
}
