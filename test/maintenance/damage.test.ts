/**
 * Damage at rest is never returned as data (issue 30 §3): one byte flipped, or the file cut short,
 * at a random point of a random live data or changelog file (seeded, seed printed). Every read
 * path — the merged read, the streamed scan, a stream's splits, compaction — either fails with
 * DataFileChecksumError naming the file and the table, or (for bytes no reader decodes: the leading
 * magic, the page indexes) returns exactly the rows of the undamaged table. Compaction never
 * commits from a damaged input. `verifyTable` reports every damaged file; `quick` only checks existence.
 */
import * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { DataFileChecksumError } from '../../lib/errors.js';
import { tableToRows } from '../../lib/format/columns.js';
import { readParquetFooter } from '../../lib/format/row-group-reader.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { entryFileKey } from '../../lib/maintenance/snapshot-references.js';
import { verifyTable } from '../../lib/maintenance/verify-table.js';
import { readEntries, readLiveFiles } from '../../lib/manifest/scan.js';
import { readManifestList } from '../../lib/manifest/manifest-list.js';
import type { MemoryStore } from '../../lib/store/memory-store.js';
import { StreamScan } from '../../lib/stream/stream-scan.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { drain } from '../stream/fixtures.js';
import { cloneStore, eightSnapshots, newTable, reopen } from './expiry-fixtures.js';

/** Every key of a live data file of the latest snapshot, and of a changelog file of any snapshot. */
async function liveFiles(table: Table): Promise<{ data: string[]; changelog: string[] }> {
  const latest = await table.snapshots.read((await table.snapshots.latestId())!);
  const data = (await readLiveFiles(table.store, table.path, latest)).map((e) => entryFileKey(table, e));
  const changelog: string[] = [];
  for (const id of await table.snapshots.listIds()) {
    const s = await table.snapshots.read(id);
    if (s.changelogManifestList === undefined) continue;
    const manifests = await readManifestList(table.store, table.path, s.changelogManifestList);
    for (const e of await readEntries(table.store, table.path, manifests, {})) changelog.push(entryFileKey(table, e));
  }
  return { data, changelog };
}

/** The byte ranges of a file its readers decode: each column chunk, and the footer to the end. */
async function decodedRanges(bytes: Uint8Array): Promise<Array<[number, number]>> {
  const footer = await readParquetFooter({ size: bytes.length, name: 'f', read: async (s, e) => bytes.subarray(s, e) });
  const len = new DataView(bytes.buffer, bytes.byteOffset + bytes.length - 8, 4).getUint32(0, true);
  return [
    ...footer.chunks.flat().map((c): [number, number] => [c.start, c.start + c.length]),
    [bytes.length - 8 - len, bytes.length],
  ];
}

type Damage = { kind: 'flip'; at: number; decoded: boolean } | { kind: 'cut'; at: number };

async function damage(store: MemoryStore, key: string, r: Rng): Promise<Damage> {
  const bytes = (await store.get(key)).body.slice();
  let d: Damage;
  if (r.chance(0.3)) {
    d = { kind: 'cut', at: r.int(1, bytes.length - 1) };
    await store.put(key, bytes.subarray(0, d.at));
    return d;
  }
  const ranges = await decodedRanges(bytes);
  const at = r.chance(0.8) ? (([s, e]) => r.int(s, e - 1))(r.pick(ranges)) : r.int(0, bytes.length - 1);
  d = { kind: 'flip', at, decoded: ranges.some(([s, e]) => at >= s && at < e) };
  bytes[at] ^= 1 << r.int(0, 7);
  await store.put(key, bytes);
  return d;
}

/** The outcome of a read: its rows as sorted strings, or the error. */
async function outcome(read: () => Promise<string[]>): Promise<{ rows?: string[]; error?: unknown }> {
  try {
    return { rows: (await read()).sort() };
  } catch (error) {
    return { error };
  }
}

function rowsOf(table: Table, t: arrow.Table): string[] {
  return tableToRows(t, table.schema.fields).map((r) =>
    JSON.stringify(r, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v)),
  );
}

async function scanRows(table: Table): Promise<string[]> {
  const out: string[] = [];
  for await (const b of table.scan()) out.push(...rowsOf(table, new arrow.Table([b])));
  return out;
}

describe('damage at rest', () => {
  it('a random byte flipped or the file cut short in a random live file: every read path fails naming it, or returns the undamaged rows; compaction refuses; verify names it (randomized)', async () => {
    const seed = testSeed('damage at rest');
    const r = rng(seed);
    // Prepare: APPEND, COMPACT (streamed to the store) and changelog files.
    const table = await newTable({ 'changelog-producer': 'input' });
    await eightSnapshots(table);
    const store = table.store as MemoryStore;
    const files = await liveFiles(table);
    const expected = {
      read: rowsOf(table, await table.read()).sort(),
      scan: (await scanRows(table)).sort(),
      stream: (await drain(new StreamScan(table, { mode: 'from-snapshot', snapshotId: 1 }), table, true)).sort(),
    };
    expect((await verifyTable(table)).ok).toBe(true);
    for (let round = 0; round < 8; round++) {
      const copy = await cloneStore(store);
      const t = reopen(table, copy);
      const victim = r.pick([...files.data, ...files.data, ...files.changelog]);
      const d = await damage(copy, victim, r);
      const what = `round ${round}: ${JSON.stringify(d)} in ${victim}, seed ${seed}`;
      const isData = files.data.includes(victim);
      const loud = d.kind === 'cut' || d.decoded;
      // Act and assess: each read path.
      const paths: Array<[string, () => Promise<string[]>, string[], boolean]> = [
        ['read', async () => rowsOf(t, await t.read()), expected.read, isData],
        ['scan', () => scanRows(t), expected.scan, isData],
        [
          'stream',
          () => drain(new StreamScan(t, { mode: 'from-snapshot', snapshotId: 1 }), t, true),
          expected.stream,
          false,
        ],
      ];
      for (const [name, read, rows, mustFail] of paths) {
        const o = await outcome(read);
        if (o.error !== undefined) {
          expect(o.error, `${name}: ${what}`).toBeInstanceOf(DataFileChecksumError);
          expect((o.error as Error).message, `${name}: ${what}`).toContain(victim);
          expect((o.error as Error).message, `${name}: ${what}`).toContain('db.t');
        } else {
          // Never other rows than the table's.
          expect(o.rows, `${name}: ${what}`).toEqual(rows);
          expect(mustFail && d.kind === 'cut', `${name} read a cut file: ${what}`).toBe(false);
        }
      }
      // Compaction reads every byte a reader decodes of every live data file: a damaged one fails it, and nothing is committed.
      const before = await t.snapshots.latestId();
      const compacted = await compactTable(t, { full: true }).then(
        () => undefined,
        (e: unknown) => e,
      );
      if (isData && loud) {
        expect(compacted, `compact: ${what}`).toBeInstanceOf(DataFileChecksumError);
        expect(await t.snapshots.latestId(), `compact committed: ${what}`).toBe(before);
      } else {
        expect(compacted, `compact: ${what}`).toBeUndefined();
      }
      // verify reads back every live file: it always names the damaged one (it was live before any compaction above).
      const v = await verifyTable(reopen(table, await restoreSnapshotsOf(store, copy)));
      expect(v.ok, what).toBe(false);
      expect(
        v.problems.some((p) => p.key === victim && p.problem.includes('damaged')),
        `${what}: ${JSON.stringify(v.problems)}`,
      ).toBe(true);
      expect((await verifyTable(reopen(table, await restoreSnapshotsOf(store, copy)), { quick: true })).ok, what).toBe(
        true,
      );
    }
  });
});

/** The damaged copy's files with the original's metadata (a compaction on the copy may have added snapshots). */
async function restoreSnapshotsOf(original: MemoryStore, copy: MemoryStore): Promise<MemoryStore> {
  const out = await cloneStore(original);
  for (const key of copy.keys())
    if (key.endsWith('.parquet') && original.keys().includes(key)) await out.put(key, (await copy.get(key)).body);
  return out;
}
