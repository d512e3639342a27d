/**
 * The Iceberg export of a deletion-vector table (issue 31 §3): every live data file, plus one
 * position delete file per data file with a vector, so Iceberg snapshot N reads exactly `varve
 * read --snapshot N`. The vectors here are computed by the test from the files themselves (for
 * every key, each stored row but the newest version, and that one too when it is a retraction),
 * written as the deletion-vector index of each snapshot, and exported snapshot by snapshot; the
 * export is then read at every snapshot with pyiceberg and icebird (outside-readers.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { afterAll, describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { tableToRows } from '../../lib/format/columns.js';
import { readDataFile } from '../../lib/format/data-file.js';
import { exportIceberg } from '../../lib/iceberg/export.js';
import { readCurrentEntries } from '../../lib/iceberg/iceberg-manifests.js';
import { icebergLocation, readCurrentIcebergMetadata } from '../../lib/iceberg/iceberg-metadata.js';
import {
  encodePositionDeleteFile,
  POSITION_DELETE_FILE_PATH_ID,
  POSITION_DELETE_POS_ID,
} from '../../lib/iceberg/position-deletes.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { removeOrphanFiles } from '../../lib/maintenance/remove-orphans.js';
import { writeBucketVectors, writeDeletionIndex, type DeletionVectorRef } from '../../lib/manifest/deletion-index.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import type { ManifestEntry } from '../../lib/manifest/types.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { KIND_COLUMN, RowKind, SEQUENCE_COLUMN, type Row } from '../../lib/schema/types.js';
import type { Snapshot } from '../../lib/snapshot/snapshot.js';
import { LocalStore } from '../../lib/store/local-store.js';
import { readEntry } from '../../lib/table/read.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed } from '../helpers/random.js';
import {
  canonicalValue,
  icebirdRows,
  lossyText,
  type PyicebergReader,
  snapshotColumnTypes,
  sortedRowTexts,
  type IcebergMetadataJson,
} from './outside-readers.js';
import { pyicebergSession } from '../helpers/pyiceberg-session.js';

const dirs: string[] = [];
const pyiceberg = pyicebergSession('the deletion-vector export test');
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('position delete files', () => {
  it('hold (file_path, pos) with Iceberg field ids, positions ascending, the path on every row', async () => {
    // Act
    const bytes = encodePositionDeleteFile(
      's3://b/t/region=eu/bucket-0/data-1.parquet',
      Uint32Array.from([0, 3, 70_000]),
    );
    // Assess
    const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    const meta = parquetMetadata(buffer);
    const ids = Object.fromEntries(meta.schema.slice(1).map((e) => [e.name, e.field_id]));
    expect(ids).toEqual({ file_path: POSITION_DELETE_FILE_PATH_ID, pos: POSITION_DELETE_POS_ID });
    expect(meta.schema.slice(1).map((e) => e.repetition_type)).toEqual(['REQUIRED', 'REQUIRED']);
    const rows = (await readDataFile(bytes)).toArray().map((x) => ({ ...x }));
    expect(rows).toEqual(
      [0n, 3n, 70_000n].map((pos) => ({ file_path: 's3://b/t/region=eu/bucket-0/data-1.parquet', pos })),
    );
    expect(() => encodePositionDeleteFile('x', Uint32Array.from([3, 3]))).toThrow(/must ascend/);
  });
});

/** The deletion vectors a snapshot must have: per file, the rows that are not the live version of their key. */
async function computedVectors(table: Table, live: readonly ManifestEntry[]): Promise<Map<ManifestEntry, number[]>> {
  const newest = new Map<string, { entry: ManifestEntry; pos: number; seq: bigint; kind: number }>();
  const rowsOf = new Map<ManifestEntry, number>();
  for (const e of live) {
    const t = await readEntry(table, e);
    const seqs = t.getChild(SEQUENCE_COLUMN)!;
    const kinds = t.getChild(KIND_COLUMN)!;
    const keys = tableToRows(t, table.keyFields);
    rowsOf.set(e, t.numRows);
    for (let i = 0; i < t.numRows; i++) {
      const key = JSON.stringify(keys[i]);
      // Stored relative to the file's sequence base (level-0 files); compaction output has base 0.
      const seq = (seqs.get(i) as bigint) + BigInt(e.file.sequenceBase);
      const old = newest.get(key);
      if (old === undefined || seq > old.seq) newest.set(key, { entry: e, pos: i, seq, kind: kinds.get(i) as number });
    }
  }
  const liveRows = new Map<ManifestEntry, Set<number>>();
  for (const n of newest.values()) {
    if (n.kind === RowKind.DELETE || n.kind === RowKind.UPDATE_BEFORE) continue;
    if (!liveRows.has(n.entry)) liveRows.set(n.entry, new Set());
    liveRows.get(n.entry)!.add(n.pos);
  }
  const out = new Map<ManifestEntry, number[]>();
  for (const [e, n] of rowsOf) {
    const deleted = Array.from({ length: n }, (_, i) => i).filter((i) => !liveRows.get(e)?.has(i));
    if (deleted.length > 0) out.set(e, deleted);
  }
  return out;
}

/**
 * Writes the deletion-vector index of `snapshot` (vectors unchanged since `previous` keep their
 * blob, as deletion-vector maintenance does) and returns the snapshot carrying it.
 */
async function withVectors(
  table: Table,
  snapshot: Snapshot,
  previous: Map<string, DeletionVectorRef>,
): Promise<Snapshot> {
  const live = await readLiveFiles(table.store, table.path, snapshot);
  const vectors = await computedVectors(table.withSchema(await table.schemaById(snapshot.schemaId)), live);
  const refs: DeletionVectorRef[] = [];
  const changed = new Map<string, { partition: string; bucket: number; vectors: Map<string, Uint32Array> }>();
  for (const [e, positions] of vectors) {
    const old = previous.get(`${e.file.fileName}:${positions.join(',')}`);
    if (old) {
      refs.push(old);
      continue;
    }
    const id = `${e.partition}/${e.bucket}`;
    if (!changed.has(id)) changed.set(id, { partition: e.partition, bucket: e.bucket, vectors: new Map() });
    changed.get(id)!.vectors.set(e.file.fileName, Uint32Array.from(positions));
  }
  for (const b of changed.values()) {
    for (const ref of await writeBucketVectors(table.store, table.path, b)) {
      refs.push(ref);
      previous.set(`${ref.fileName}:${[...b.vectors.get(ref.fileName)!].join(',')}`, ref);
    }
  }
  return { ...snapshot, deletionVectors: await writeDeletionIndex(table.store, table.path, refs) };
}

describe('the Iceberg export of a deletion-vector table', () => {
  it('reads as varve read --snapshot N at every snapshot, in pyiceberg and icebird', {
    timeout: 300_000,
  }, async (ctx) => {
    const py = pyiceberg();
    if (py === undefined) return ctx.skip();
    // Prepare: commits of upserts, deletes, an overwrite and compactions, exported afterwards (the
    // vectors are the test's), then each snapshot with its vectors exported in turn
    const seed = testSeed('iceberg.deletion-vector-export');
    const r = rng(seed);
    const dir = mkdtempSync(join(tmpdir(), 'varve-dv-export-'));
    dirs.push(dir);
    const store = new LocalStore(dir);
    let table = await new FolderCatalog(store).createTable('db.dv', {
      fields: parseSchemaText('id INT NOT NULL, region STRING NOT NULL, v BIGINT, name STRING'),
      primaryKeys: ['region', 'id'],
      partitionKeys: ['region'],
      options: { bucket: '2', 'deletion-vectors.enabled': 'true', 'num-sorted-run.compaction-trigger': '10' },
    });
    const row = (): Row => ({
      id: r.int(0, 15),
      region: r.pick(['eu', 'us']),
      v: BigInt(r.int(0, 1e6)),
      name: r.pick([null, 'a', 'ünï']),
    });
    const log: string[] = [];
    for (let i = 0; i < 12; i++) {
      const op = i === 5 ? 'overwrite' : i === 8 ? 'compact' : r.pick(['upsert', 'upsert', 'delete']);
      log.push(op);
      if (op === 'overwrite') await table.overwrite(Array.from({ length: 5 }, row));
      else if (op === 'compact') await compactTable(table, { full: r.chance(0.5) });
      else {
        const rows = Array.from({ length: r.int(2, 10) }, row);
        await table.write(rows, {
          kinds: rows.map(() => (op === 'delete' ? RowKind.DELETE : r.pick([RowKind.INSERT, RowKind.UPDATE_AFTER]))),
        });
      }
    }
    table = (await table.alter([{ kind: 'set-option', key: 'metadata.iceberg.storage', value: 'table-location' }]))
      .table;
    const loc = icebergLocation(table)!;
    // The alter's own commit exported (with the new storage option): start the Iceberg history over,
    // so that each snapshot below is exported in turn.
    rmSync(join(dir, loc.metadataDir), { recursive: true, force: true });
    const previous = new Map<string, DeletionVectorRef>();
    const latest = (await table.snapshots.latestId())!;
    let withDeletes = 0;
    /** Reads snapshots `ids` of the current metadata with both readers and compares them with varve read --snapshot. */
    const check = async (py: PyicebergReader, ids: number[] | 'all') => {
      const current = (await readCurrentIcebergMetadata(store, loc))!;
      const metadata = current.metadata as unknown as IcebergMetadataJson;
      const listed = ids === 'all' ? metadata.snapshots.map((s) => s['snapshot-id']) : ids;
      const rows = await py.read(join(dir, current.key), listed);
      for (const sid of listed) {
        const what = `snapshot ${sid} of v${current.version} (seed ${seed}: ${log.join(' ')})`;
        const fields = (await table.schemaById((await table.snapshots.tryRead(sid))!.schemaId)).fields;
        const varve = tableToRows(await table.read({ snapshotId: sid }), fields).map((x) =>
          fields.map((f) => canonicalValue(f, x[f.name])),
        );
        const expected = { columns: fields.map((f) => f.name), rows: varve };
        expect(sortedRowTexts(rows.get(sid)!), `${what}: pyiceberg`).toEqual(sortedRowTexts(expected));
        const types = snapshotColumnTypes(metadata, sid);
        const bird = await icebirdRows(loc.tableUri, metadata, sid);
        expect(sortedRowTexts(bird), `${what}: icebird`).toEqual(
          sortedRowTexts(expected, (c, t) => lossyText(types.get(c)!, t)),
        );
      }
      return listed;
    };
    // Act + Assess: after each export its snapshot, at the end every one (time travel by id)
    for (let id = 1; id <= latest; id++) {
      const result = await exportIceberg(table, {
        snapshot: await withVectors(table, (await table.snapshots.tryRead(id))!, previous),
      });
      expect(result.status).toBe('exported');
      const current = (await readCurrentIcebergMetadata(store, loc))!;
      if ((await readCurrentEntries(store, current.metadata)).some((e) => e.content === 1 && e.status !== 2))
        withDeletes++;
      await check(py, [id]);
    }
    expect(await check(py, 'all')).toEqual(Array.from({ length: latest }, (_, i) => i + 1));
    expect(withDeletes).toBeGreaterThanOrEqual(latest / 3);
    // orphan cleanup keeps every position delete file the metadata lists
    await removeOrphanFiles(table, { olderThanMs: 0 });
    expect(await check(py, 'all')).toHaveLength(latest);
  });
});
