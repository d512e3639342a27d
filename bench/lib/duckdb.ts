/**
 * DuckDB (`@duckdb/node-api`, a devDependency) as an independent engine: a single-threaded
 * in-memory instance, the merge-on-read query over a table's Parquet files, and the benchmark
 * checksum in SQL.
 */
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import type { Checksum } from './checksum.js';
import type { LiveFile } from './tables.js';

/**
 * An in-memory DuckDB limited to one thread (varve's reads are single-threaded JS too), or with
 * DuckDB's default thread count (one per core) when `threads` is 'default'.
 */
export async function openDuckDB(threads: 1 | 'default' = 1): Promise<{ conn: DuckDBConnection; close: () => void }> {
  const instance = await DuckDBInstance.create(':memory:', threads === 1 ? { threads: '1' } : {});
  const conn = await instance.connect();
  if (threads === 1) await conn.run('SET threads = 1');
  return {
    conn,
    close: () => {
      conn.closeSync();
      instance.closeSync();
    },
  };
}

function quote(path: string): string {
  return `'${path.replaceAll("'", "''")}'`;
}

/**
 * The merged state of the given files: per key the version with the highest absolute sequence
 * number (the file's sequence base plus the stored `_SEQUENCE_NUMBER`: level-0 files store numbers
 * relative to their batch), without retracted keys.
 */
export function mergeQuery(files: readonly LiveFile[]): string {
  const parts = files.map((f) => `SELECT *, ${f.sequenceBase}::BIGINT AS _base FROM read_parquet(${quote(f.path)})`);
  return `SELECT key, i32, f, s, opt FROM (
  SELECT * FROM (${parts.join('\n  UNION ALL ')})
  QUALIFY row_number() OVER (PARTITION BY key ORDER BY _base + _SEQUENCE_NUMBER DESC) = 1
) WHERE _VALUE_KIND IN (0, 2)`;
}

/**
 * What a full compaction of the files writes, as a DuckDB `COPY`: the merged newest version of
 * every key (mergeQuery) with its absolute sequence number and row kind, sorted by key, into one
 * zstd Parquet file with varve's row-group size.
 */
export function compactCopy(files: readonly LiveFile[], out: string, rowGroupSize: number): string {
  const parts = files.map((f) => `SELECT *, ${f.sequenceBase}::BIGINT AS _base FROM read_parquet(${quote(f.path)})`);
  return `COPY (
  SELECT key, i32, f, s, opt, _base + _SEQUENCE_NUMBER AS _SEQUENCE_NUMBER, _VALUE_KIND FROM (
    SELECT * FROM (${parts.join('\n    UNION ALL ')})
    QUALIFY row_number() OVER (PARTITION BY key ORDER BY _base + _SEQUENCE_NUMBER DESC) = 1
  ) WHERE _VALUE_KIND IN (0, 2) ORDER BY key
) TO ${quote(out)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${rowGroupSize})`;
}

/** The benchmark checksum (lib/checksum.ts) of a relation, computed by DuckDB. */
export async function duckChecksum(conn: DuckDBConnection, relation: string): Promise<Checksum> {
  const reader = await conn.runAndReadAll(`SELECT
    count(*)::VARCHAR, coalesce(sum(key), 0)::VARCHAR, coalesce(sum((key % 64) * i32), 0)::VARCHAR,
    coalesce(sum(i32), 0)::VARCHAR, coalesce(sum(f * 1048576), 0)::BIGINT::VARCHAR,
    coalesce(sum(CAST(substr(s, 6) AS BIGINT)), 0)::VARCHAR, count(opt)::VARCHAR,
    coalesce(sum(CAST(substr(opt, 5) AS BIGINT)), 0)::VARCHAR
    FROM ${relation}`);
  const [rows, keySum, mix, i32Sum, fUnits, sSum, optCount, optSum] = reader.getRows()[0].map((v) => String(v));
  return { rows: Number(rows), keySum, mix: Number(mix), i32Sum: Number(i32Sum), fUnits: Number(fUnits), sSum: Number(sSum), optCount: Number(optCount), optSum: Number(optSum) };
}
