/**
 * What an APPEND commit costs in object-store requests on a warm writer (one that committed
 * before in this process), beside its data files: at most 3 metadata PUTs (manifest, manifest
 * list, snapshot), 1 GET (none measured since the rollback check after the commit point went),
 * 1 HEAD and no LIST — counted by a wrapping store on a local folder and
 * by an AWS SDK middleware on S3 (moto). And a committer whose LATEST hint lags still commits
 * right after the latest snapshot.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { latestHintKey } from '../../lib/snapshot/paths.js';
import { LocalStore } from '../../lib/store/local-store.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { fromUtf8, utf8, type ObjectStore } from '../../lib/store/object-store.js';
import { S3Store } from '../../lib/store/s3-store.js';
import type { Table } from '../../lib/table/table.js';
import { awsAvailable, freshBucket } from '../helpers/aws.js';
import { testTable } from '../helpers/tables.js';

/** Request name → count, e.g. "PUT manifest", "HEAD snapshot". */
type Counts = Record<string, number>;

/** The part of a table a key belongs to. */
function kindOf(key: string): string {
  if (/\/snapshot\/(LATEST|EARLIEST)$/.test(key)) return 'hint';
  if (/\/snapshot\//.test(key)) return 'snapshot';
  if (/\/manifest\/manifest-list-/.test(key)) return 'manifest-list';
  if (/\/manifest\//.test(key)) return 'manifest';
  if (/\/bucket-\d+\//.test(key)) return 'data';
  return 'other';
}

function add(counts: Counts, request: string): void {
  counts[request] = (counts[request] ?? 0) + 1;
}

/** A store that counts its requests into `counts` (a conditional put is a PUT, as on S3). */
function countingStore(inner: ObjectStore, counts: Counts): ObjectStore {
  return {
    uri: inner.uri,
    get: (k) => (add(counts, `GET ${kindOf(k)}`), inner.get(k)),
    getRange: (k, a, b) => (add(counts, `GET ${kindOf(k)}`), inner.getRange(k, a, b)),
    head: (k) => (add(counts, `HEAD ${kindOf(k)}`), inner.head(k)),
    put: (k, b) => (add(counts, `PUT ${kindOf(k)}`), inner.put(k, b)),
    putIfAbsent: (k, b) => (add(counts, `PUT ${kindOf(k)}`), inner.putIfAbsent(k, b)),
    putIfMatch: (k, b, e) => (add(counts, `PUT ${kindOf(k)}`), inner.putIfMatch(k, b, e)),
    delete: (k) => (add(counts, `DELETE ${kindOf(k)}`), inner.delete(k)),
    list: (p) => (add(counts, `LIST ${kindOf(p)}`), inner.list(p)),
  };
}

/** An S3 client whose every command is counted into `counts` by an SDK middleware. */
function countingS3Client(counts: Counts): S3Client {
  const client = new S3Client({ forcePathStyle: true });
  const verb: Record<string, string> = {
    GetObjectCommand: 'GET',
    HeadObjectCommand: 'HEAD',
    PutObjectCommand: 'PUT',
    ListObjectsV2Command: 'LIST',
    DeleteObjectCommand: 'DELETE',
  };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { Key?: string; Prefix?: string };
      add(counts, `${verb[context.commandName!] ?? context.commandName} ${kindOf(input.Key ?? input.Prefix ?? '')}`);
      return next(args);
    },
    { step: 'initialize', name: 'varveRequestCounter' },
  );
  return client;
}

/**
 * Small, so that the warm commits below include several that merge manifests: those take their
 * own entries into the merged manifest (manifest/merge.ts) and stay at three PUTs too.
 */
const MERGE_MIN_COUNT = 4;

function newTable(store: ObjectStore): Promise<Table> {
  return testTable({
    store,
    schema: 'id BIGINT, v STRING',
    primaryKeys: ['id'],
    options: {
      bucket: '2',
      'write-only': 'true',
      'num-sorted-run.stop-trigger': '1000',
      'manifest.merge-min-count': String(MERGE_MIN_COUNT),
    },
  });
}

/**
 * Commits `n` small appends (keys spread over both buckets); returns the counts of each. Without
 * `identified` the writer's identifier is fresh (nothing to deduplicate); with it each commit has
 * its own identifier, which the identifier index (commit-identifier.ts) claims: 1 PUT more.
 */
async function commitsOf(
  table: Table,
  counts: Counts,
  first: number,
  n: number,
  identified = false,
): Promise<Counts[]> {
  const out: Counts[] = [];
  for (let c = first; c < first + n; c++) {
    for (const k of Object.keys(counts)) delete counts[k];
    const started = performance.now();
    const r = await table.write(
      [
        { id: BigInt(2 * c), v: `a${c}` },
        { id: BigInt(2 * c + 1), v: `b${c}` },
      ],
      { commitUser: 'w', ...(identified ? { commitIdentifier: `commit-${c}` } : {}) },
    );
    expect(r.snapshot?.id).toBe(c + 1);
    out.push({ ...counts, [ELAPSED]: performance.now() - started });
  }
  return out;
}

/** Pseudo-count carrying the write's wall time in ms (not a request: no verb prefix). */
const ELAPSED = 'elapsed ms';

/**
 * The HEADs a warm commit may make: it re-checks its base only once the base was last seen more
 * than a second ago (commit.ts SLOW_ATTEMPT_MS), so a write under a second makes at most one, and
 * a slower one (a busy machine) at most one per second it took, plus one.
 */
function headBudget(c: Counts): number {
  const elapsed = c[ELAPSED] ?? 0;
  return elapsed < 2000 ? 1 : 1 + Math.floor(elapsed / 1000);
}

function total(c: Counts, verb: string, exceptData = true): number {
  return Object.entries(c)
    .filter(([k]) => k.startsWith(`${verb} `) && !(exceptData && k.endsWith(' data')))
    .reduce((s, [, v]) => s + v, 0);
}

/** Asserts the warm budget for every commit and prints the table of requests per commit. */
function checkWarmCommits(label: string, perCommit: Counts[]): void {
  const kinds = [...new Set(perCommit.flatMap((c) => Object.keys(c)))].sort();
  console.log(
    `${label}: requests per warm APPEND commit\n` +
      kinds
        .filter((k) => k !== ELAPSED)
        .map((k) => `  ${k.padEnd(22)} ${perCommit.map((c) => c[k] ?? 0).join(' ')}`)
        .join('\n'),
  );
  for (const c of perCommit) {
    // A warm committer never writes the LATEST hint (snapshot-manager.ts): exactly these three.
    expect(total(c, 'PUT'), JSON.stringify(c)).toBe(3);
    expect(c['PUT manifest'], JSON.stringify(c)).toBe(1);
    expect(c['PUT manifest-list'], JSON.stringify(c)).toBe(1);
    expect(c['PUT snapshot'], JSON.stringify(c)).toBe(1);
    expect(total(c, 'GET'), JSON.stringify(c)).toBeLessThanOrEqual(1);
    expect(total(c, 'HEAD'), JSON.stringify(c)).toBeLessThanOrEqual(headBudget(c));
    expect(total(c, 'LIST', false), JSON.stringify(c)).toBe(0);
    expect(c['PUT data'], JSON.stringify(c)).toBeGreaterThanOrEqual(1); // one per bucket the rows hash to
  }
}

/**
 * An identified commit: the plain budget plus the identifier index's claim (1 PUT, before the
 * snapshot), nothing else — expiry marks the index later, inside its journal.
 */
function checkIdentifiedCommits(perCommit: Counts[]): void {
  for (const c of perCommit) {
    expect(c['PUT other'], JSON.stringify(c)).toBe(1);
    expect(total(c, 'PUT') - c['PUT other'], JSON.stringify(c)).toBe(3);
    expect(total(c, 'GET'), JSON.stringify(c)).toBeLessThanOrEqual(1);
    expect(total(c, 'HEAD'), JSON.stringify(c)).toBeLessThanOrEqual(headBudget(c));
    expect(total(c, 'LIST', false), JSON.stringify(c)).toBe(0);
  }
}

describe('commit cost on a warm writer', () => {
  it('on a local folder: ≤ 3 metadata PUTs, ≤ 1 GET, ≤ 1 HEAD, no LIST', async () => {
    const counts: Counts = {};
    const table = await newTable(countingStore(new LocalStore(mkdtempSync(join(tmpdir(), 'varve-cost-'))), counts));
    await commitsOf(table, counts, 0, 2); // warm-up: the first commits find the table cold
    checkWarmCommits('LocalStore', await commitsOf(table, counts, 2, 10));
    // With an explicit identifier, the identifier index adds its claim, nothing else.
    checkIdentifiedCommits(await commitsOf(table, counts, 12, 3, true));
  });

  it.skipIf(!awsAvailable())('on S3 (moto), counted by an SDK middleware: the same budget', async () => {
    const counts: Counts = {};
    const table = await newTable(new S3Store({ bucket: await freshBucket(), client: countingS3Client(counts) }));
    await commitsOf(table, counts, 0, 2);
    checkWarmCommits('S3Store (moto)', await commitsOf(table, counts, 2, 10));
    checkIdentifiedCommits(await commitsOf(table, counts, 12, 3, true));
  });
});

describe('a LATEST hint that lags', () => {
  it('a cold committer still commits right after the latest snapshot', async () => {
    // Prepare: 5 snapshots, the hint saying 1, and a second process (a fresh catalog) committing
    const store = new MemoryStore();
    const table = await newTable(store);
    await commitsOf(table, {}, 0, 5);
    await store.put(latestHintKey(table.path), utf8('1'));
    const other = await new FolderCatalog(store).getTable('db.t');
    // Act
    const r = await other.write([{ id: 100n, v: 'late' }], { commitUser: 'other', commitIdentifier: 'late' });
    // Assess: snapshot 6 on top of 5, nothing lost
    expect(r.snapshot?.id).toBe(6);
    expect(r.snapshot?.totalRecordCount).toBe(11);
    expect((await other.read()).numRows).toBe(11);
  });

  it.each([
    ['missing', undefined],
    ['ahead of the table (a rollback undone)', '40'],
  ])('a LATEST hint %s: a cold committer still commits right after the latest snapshot', async (_what, hint) => {
    const store = new MemoryStore();
    const table = await newTable(store);
    await commitsOf(table, {}, 0, 5);
    if (hint === undefined) await store.delete(latestHintKey(table.path));
    else await store.put(latestHintKey(table.path), utf8(hint));
    const other = await new FolderCatalog(store).getTable('db.t');
    const r = await other.write([{ id: 100n, v: 'late' }], { commitUser: 'other', commitIdentifier: 'late' });
    expect(r.snapshot?.id).toBe(6);
    expect((await other.read()).numRows).toBe(11);
    // The cold committer looked the latest up, so it brought the hint up to date.
    expect(fromUtf8((await store.get(latestHintKey(table.path))).body)).toBe('6');
  });

  it('a warm committer whose known snapshot was followed by another writer loses the race and lands next', async () => {
    const store = new MemoryStore();
    const table = await newTable(store);
    await commitsOf(table, {}, 0, 2);
    const other = await new FolderCatalog(store).getTable('db.t');
    await other.write([{ id: 100n, v: 'other' }], { commitUser: 'other', commitIdentifier: 'o1' });
    // table's writer still believes snapshot 2 is the latest
    const r = await table.write([{ id: 101n, v: 'mine' }], { commitUser: 'w', commitIdentifier: 'w3' });
    expect(r.snapshot?.id).toBe(4);
    expect((await table.read()).numRows).toBe(6);
  });
});
