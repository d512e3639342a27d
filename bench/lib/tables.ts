/** Benchmark tables: creation in a local folder warehouse, versioned writes, and their live files. */
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import type { Snapshot } from '../../lib/snapshot/snapshot.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { LocalStore } from '../../lib/store/local-store.js';
import type { ObjectStore } from '../../lib/store/object-store.js';
import { dataFileKey } from '../../lib/table/paths.js';
import type { Table } from '../../lib/table/table.js';
import { BENCH_SCHEMA_TEXT, makeRows } from './data.js';
import { BenchCheckError } from './checksum.js';

/** Buckets of every benchmark table. */
export const BENCH_BUCKETS = 4;

/**
 * Options of benchmark tables: `write-only`, so a write never compacts inline (compaction is
 * measured on its own), and a stop trigger high enough for the thousands of level-0 files the
 * commit benchmark leaves behind (the write stall is not what these benchmarks measure).
 */
export const BENCH_OPTIONS: Record<string, string> = {
  bucket: String(BENCH_BUCKETS),
  'write-only': 'true',
  'num-sorted-run.stop-trigger': '1000000',
};

/** A fresh folder under `root`. */
export function freshDir(root: string, prefix: string): Promise<string> {
  return mkdtemp(join(root, `${prefix}-`));
}

/** Deletes a folder tree. */
export function removeDir(dir: string): Promise<void> {
  return rm(dir, { recursive: true, force: true });
}

/** Creates the benchmark table `bench.<name>` in a store (a LocalStore on `dir` by default). */
export async function createBenchTable(
  where: string | ObjectStore,
  name = 't',
  options: Record<string, string> = {},
): Promise<Table> {
  const store = typeof where === 'string' ? new LocalStore(where) : where;
  return new FolderCatalog(store).createTable(`bench.${name}`, {
    fields: parseSchemaText(BENCH_SCHEMA_TEXT),
    primaryKeys: ['key'],
    options: { ...BENCH_OPTIONS, ...options },
  });
}

/** Opens `bench.<name>` again on another store (a copy of the folder). */
export function openBenchTable(store: ObjectStore, name = 't'): Promise<Table> {
  return new FolderCatalog(store).getTable(`bench.${name}`);
}

/** Writes rows (keys[i], version) through writeArrow and commits them; returns the snapshot. */
export async function writeVersion(
  table: Table,
  keys: Int32Array,
  version: number | Int32Array,
  chunk = 1_000_000,
): Promise<Snapshot> {
  const writer = table.newWriter();
  try {
    for (let from = 0; from < keys.length; from += chunk) {
      const v = typeof version === 'number' ? version : version.subarray(from, from + chunk);
      await writer.writeArrow(makeRows(keys.subarray(from, from + chunk), v));
    }
    const r = await writer.commit();
    if (!r.snapshot) throw new BenchCheckError(`writing ${keys.length} rows committed nothing`);
    return r.snapshot;
  } finally {
    await writer.close();
  }
}

/** A live data file of a snapshot, with its absolute path in a LocalStore warehouse. */
export interface LiveFile {
  path: string;
  bucket: number;
  level: number;
  rows: number;
  bytes: number;
  sequenceBase: number;
}

/** The live data files of a snapshot of a table in a LocalStore, ordered by bucket, level, sequence. */
export async function liveFiles(table: Table, snapshot: Snapshot): Promise<LiveFile[]> {
  const store = table.store as LocalStore;
  if (!(store instanceof LocalStore)) throw new Error('liveFiles needs a table in a LocalStore');
  const entries = await readLiveFiles(table.store, table.path, snapshot);
  entries.sort(
    (a, b) => a.bucket - b.bucket || a.file.level - b.file.level || a.file.minSequenceNumber - b.file.minSequenceNumber,
  );
  return entries.map((e) => ({
    path: join(store.root, dataFileKey(table.path, e.partition, e.bucket, e.file.fileName)),
    bucket: e.bucket,
    level: e.file.level,
    rows: e.file.rowCount,
    bytes: e.file.fileSize,
    sequenceBase: e.file.sequenceBase,
  }));
}

/** The warehouse folder of a table in a LocalStore. */
export function warehouseDir(table: Table): string {
  if (!(table.store instanceof LocalStore)) throw new Error(`${table.name} is not in a LocalStore`);
  return table.store.root;
}
