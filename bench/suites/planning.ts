/**
 * Benchmark 4, planning: the time to plan a read (`readLiveFiles` on the latest snapshot) as the
 * commit history grows (10 → 1,000 → 10,000 commits, compacting as a writer would) and with 100k
 * live files. The metadata is built directly through the commit protocol on a MemoryStore, with
 * no data files, so the numbers are the CPU cost of the metadata path; the request counts say
 * what a remote store adds.
 */
import { readLiveFiles, readDataManifests } from '../../lib/manifest/scan.js';
import type { DataFileMeta, ManifestEntry } from '../../lib/manifest/types.js';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { commit, type CommitBatch, type FileChange } from '../../lib/snapshot/commit.js';
import { SnapshotManager } from '../../lib/snapshot/snapshot-manager.js';
import { LruManifestCache } from '../../lib/manifest/manifest-file.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { fromUtf8 } from '../../lib/store/object-store.js';
import { commitOptionsFor } from '../../lib/table/commit-options.js';
import type { Table } from '../../lib/table/table.js';
import { BENCH_SCHEMA_TEXT } from '../lib/data.js';
import { BenchCheckError, assertEqual } from '../lib/checksum.js';
import { CountingStore } from '../lib/counting-store.js';
import { compare, ratioOf, statsOf, type RepPlan } from '../lib/harness.js';
import type { Measurement, Ratio, SuiteContext, SuiteResult } from '../lib/results.js';

const BUCKETS = 4;
/** Universal compaction's max level with the default num-levels (6). */
const MAX_LEVEL = 5;
/** Every this many commits, one bucket is fully compacted (round robin), as a writer's compaction would. */
const COMPACT_EVERY = 10;

/** A synthetic file covering the bucket's key range (buckets hash keys, so every bucket spans all keys). */
function fakeFile(name: string, level: number, rows: number, seqFrom: number, sequenceBase = 0): DataFileMeta {
  return {
    fileName: name,
    fileSize: 4_000_000,
    rowCount: rows,
    minKey: ['1000000000000'],
    maxKey: ['1000070000000'],
    sequenceBase,
    minSequenceNumber: seqFrom,
    maxSequenceNumber: seqFrom + rows - 1,
    schemaId: 0,
    level,
    creationTime: 1_700_000_000_000,
    deleteRowCount: 0,
    fileSource: level === 0 ? 'APPEND' : 'COMPACT',
  };
}

/** Builds a table's metadata commit by commit and tracks what must be live. */
class HistoryBuilder {
  readonly live = new Map<string, ManifestEntry>();
  commits = 0;
  private files = 0;
  private readonly sm: SnapshotManager;
  private readonly cache = new LruManifestCache(1_000_000);

  constructor(readonly table: Table) {
    this.sm = new SnapshotManager(table.store, table.path, { cacheSnapshots: true });
  }

  private opts() {
    return commitOptionsFor(this.table, { snapshotManager: this.sm, manifestCache: this.cache });
  }

  /** One APPEND commit of `files` one-row… files, spread over the buckets. */
  async append(files: number, rowsPerFile = 1000): Promise<void> {
    const newFiles: FileChange[] = [];
    for (let j = 0; j < files; j++) {
      const bucket = (this.commits + j) % BUCKETS;
      newFiles.push({
        partition: '',
        bucket,
        totalBuckets: BUCKETS,
        file: fakeFile(`data-${this.files++}.parquet`, 0, rowsPerFile, j * rowsPerFile),
      });
    }
    const batch: CommitBatch = { rowCount: files * rowsPerFile, newFiles, changelogFiles: [] };
    const r = await commit(
      this.table.store,
      this.table.path,
      { commitUser: 'bench', commitIdentifier: `c${this.commits}`, kind: 'APPEND', schemaId: 0, batches: [batch] },
      this.opts(),
    );
    const base = r.snapshot.nextSequenceNumber - batch.rowCount;
    for (const c of newFiles) {
      const file = {
        ...c.file,
        sequenceBase: base,
        minSequenceNumber: base + c.file.minSequenceNumber,
        maxSequenceNumber: base + c.file.maxSequenceNumber,
      };
      this.live.set(file.fileName, { kind: 'ADD', partition: '', bucket: c.bucket, totalBuckets: BUCKETS, file });
    }
    this.commits++;
  }

  /** One COMPACT commit: every live file of `bucket` into one file at the max level. */
  async compact(bucket: number): Promise<void> {
    const before = [...this.live.values()].filter((e) => e.bucket === bucket);
    if (before.length === 0) return;
    const rows = before.reduce((n, e) => n + e.file.rowCount, 0);
    const maxSeq = Math.max(...before.map((e) => e.file.maxSequenceNumber));
    const after = fakeFile(`data-${this.files++}.parquet`, MAX_LEVEL, rows, maxSeq - rows + 1);
    const change = (file: DataFileMeta): FileChange => ({ partition: '', bucket, totalBuckets: BUCKETS, file });
    await commit(
      this.table.store,
      this.table.path,
      {
        commitUser: 'compactor',
        commitIdentifier: `k${this.commits}`,
        kind: 'COMPACT',
        schemaId: 0,
        compactBefore: before.map((e) => change(e.file)),
        compactAfter: [change(after)],
      },
      this.opts(),
    );
    for (const e of before) this.live.delete(e.file.fileName);
    this.live.set(after.fileName, { kind: 'ADD', partition: '', bucket, totalBuckets: BUCKETS, file: after });
    this.commits++;
  }

  /** Commits until `target` commits exist: one file per APPEND, a bucket compaction every COMPACT_EVERY. */
  async growTo(target: number): Promise<void> {
    while (this.commits < target) {
      if (this.commits % COMPACT_EVERY === COMPACT_EVERY - 1)
        await this.compact(Math.floor(this.commits / COMPACT_EVERY) % BUCKETS);
      else await this.append(1);
    }
  }
}

async function newTable(store: MemoryStore, name: string): Promise<Table> {
  return new FolderCatalog(store).createTable(name, {
    fields: parseSchemaText(BENCH_SCHEMA_TEXT),
    primaryKeys: ['key'],
    options: { bucket: String(BUCKETS), 'write-only': 'true' },
  });
}

/** Plans a read cold (no cache, fresh snapshot lookup) and checks it finds exactly the live files. */
function planVariant(table: Table, counting: CountingStore, expected: Map<string, ManifestEntry>, requests: number[]) {
  return {
    id: 'plan',
    // A small history plans in well under a millisecond: average several plans per sample.
    inner: expected.size < 1000 ? 50 : 1,
    setup: () => counting.reset(),
    run: async () => {
      const latest = await new SnapshotManager(counting, table.path).latest();
      if (!latest) throw new BenchCheckError('planning: the table has no snapshot');
      return readLiveFiles(counting, table.path, latest);
    },
    check: (entries: ManifestEntry[]) => {
      requests.push(counting.total / (expected.size < 1000 ? 50 : 1));
      assertEqual('planning: live file count', entries.length, expected.size);
      for (const e of entries) {
        const want = expected.get(e.file.fileName);
        if (
          !want ||
          want.bucket !== e.bucket ||
          want.file.level !== e.file.level ||
          want.file.sequenceBase !== e.file.sequenceBase
        ) {
          throw new BenchCheckError(
            `WRONG RESULT in planning: live file ${e.file.fileName} (bucket ${e.bucket}, level ${e.file.level}) is not expected`,
          );
        }
      }
    },
  };
}

/** The floor: fetch and JSON.parse every manifest the snapshot names, without folding. */
function rawParseVariant(table: Table, expected: Map<string, ManifestEntry>) {
  return {
    id: 'raw-parse',
    run: async () => {
      const latest = (await new SnapshotManager(table.store, table.path).latest())!;
      const manifests = await readDataManifests(table.store, table.path, latest);
      let entries = 0;
      for (const m of manifests) {
        const body = (await table.store.get(`${table.path}/manifest/${m.fileName}`)).body;
        entries += (JSON.parse(fromUtf8(body)) as { entries: unknown[] }).entries.length;
      }
      return entries;
    },
    check: (entries: number) => {
      if (entries < expected.size)
        throw new BenchCheckError(
          `WRONG RESULT in planning raw parse: ${entries} entries for ${expected.size} live files`,
        );
    },
  };
}

/** Runs benchmark 4. */
export async function runPlanning(ctx: SuiteContext): Promise<SuiteResult> {
  const plan: RepPlan = ctx.quick ? { warmup: 1, reps: 5 } : { warmup: 2, reps: 9 };
  const steps = ctx.quick ? [10, 300] : [10, 1000, 10_000];
  const bigFiles = ctx.quick ? 20_000 : 100_000;
  const measurements: Measurement[] = [];
  const ratios: Ratio[] = [];
  const rows: Array<Array<string | number>> = [];

  const store = new MemoryStore();
  const table = await newTable(store, 'bench.history');
  const builder = new HistoryBuilder(table);
  const counting = new CountingStore(store);
  let first: Measurement | undefined;
  for (const n of steps) {
    const t0 = performance.now();
    await builder.growTo(n);
    // MemoryStore logs every call; drop the build's log so its garbage does not weigh on the plans.
    store.resetCallLog();
    ctx.log(
      `planning: ${n} commits built in ${((performance.now() - t0) / 1000).toFixed(1)} s, ${builder.live.size} live files`,
    );
    // Deep reads must find the manifest objects the builder wrote, not its cache.
    const requests: number[] = [];
    const t = await compare(plan, [planVariant(table, counting, builder.live, requests)], ctx.log);
    const manifests = (await readDataManifests(store, table.path, (await table.snapshots.latest())!)).length;
    const m: Measurement = {
      id: `plan-${n}-commits`,
      label: `plan after ${n.toLocaleString('en')} commits (${builder.live.size} live files)`,
      unit: 'ms',
      stats: t.plan,
      params: { commits: n, liveFiles: builder.live.size, manifests, requests: requests[requests.length - 1] },
    };
    measurements.push(m);
    rows.push([
      n.toLocaleString('en'),
      builder.live.size,
      manifests,
      requests[requests.length - 1],
      t.plan.median.toFixed(2),
    ]);
    if (!first) first = m;
    else
      ratios.push({
        id: `plan-${n}-vs-${steps[0]}`,
        label: `plan after ${n.toLocaleString('en')} commits ÷ after ${steps[0]} commits`,
        ...ratioOf(m.stats, first.stats),
      });
  }

  const bigStore = new MemoryStore();
  const big = await newTable(bigStore, 'bench.wide');
  const bigBuilder = new HistoryBuilder(big);
  const perCommit = 10_000;
  const t0 = performance.now();
  for (let done = 0; done < bigFiles; done += perCommit)
    await bigBuilder.append(Math.min(perCommit, bigFiles - done), 100);
  bigStore.resetCallLog();
  ctx.log(`planning: ${bigFiles} live files built in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const bigCounting = new CountingStore(bigStore);
  const bigRequests: number[] = [];
  const bt = await compare(
    plan,
    [planVariant(big, bigCounting, bigBuilder.live, bigRequests), rawParseVariant(big, bigBuilder.live)],
    ctx.log,
  );
  const bigManifests = (await readDataManifests(bigStore, big.path, (await big.snapshots.latest())!)).length;
  measurements.push({
    id: 'plan-wide',
    label: `plan with ${bigFiles.toLocaleString('en')} live files`,
    unit: 'ms',
    stats: bt.plan,
    params: { liveFiles: bigFiles, manifests: bigManifests },
  });
  measurements.push({
    id: 'raw-parse-wide',
    label: `fetch + JSON.parse of the same manifests (floor)`,
    unit: 'ms',
    stats: bt['raw-parse'],
  });
  rows.push([
    `${bigBuilder.commits} (wide)`,
    bigFiles,
    bigManifests,
    bigRequests[bigRequests.length - 1],
    bt.plan.median.toFixed(2),
  ]);
  ratios.push({
    id: 'plan-wide-vs-parse',
    label: `plan ${bigFiles.toLocaleString('en')} live files ÷ bare fetch + JSON.parse of its manifests`,
    ...ratioOf(bt.plan, bt['raw-parse']),
  });
  const perFile = statsOf(bt.plan.samples.map((ms) => (ms * 1000) / bigFiles));
  measurements.push({ id: 'plan-per-file', label: 'plan cost per live file', unit: 'µs', stats: perFile });

  return {
    id: 'planning',
    title: '4. Planning a read',
    method: [
      `Metadata built through lib/snapshot/commit.ts on a MemoryStore with synthetic file entries (no data files): APPEND commits of one file each, and every ${COMPACT_EVERY}th commit a COMPACT of one bucket (round robin over ${BUCKETS}) into one max-level file, as a writer's compaction would; manifests merge at their default thresholds.`,
      'Timed: resolving the latest snapshot and `readLiveFiles` on it, cold (fresh SnapshotManager, no manifest cache), so every manifest list and manifest is fetched and parsed.',
      `Wide case: ${bigFiles.toLocaleString('en')} live files from ${bigBuilder.commits} APPEND commits of ${perCommit.toLocaleString('en')} files; its floor is fetching and JSON.parse-ing the same manifests without folding.`,
      'MemoryStore = no I/O latency: this is the CPU cost. On S3 each manifest is one GET (16 in parallel); the request column gives the count.',
    ],
    checks: [
      'Every plan returns exactly the files the builder committed and did not compact away (names, buckets, levels, sequence bases).',
    ],
    measurements,
    ratios,
    tables: [
      {
        title: 'Planning cost by history',
        columns: ['commits', 'live files', 'manifests read', 'store requests', 'median ms'],
        rows,
      },
    ],
  };
}
