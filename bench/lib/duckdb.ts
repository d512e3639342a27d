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
 * relative to their batch), without retracted keys. Written as the newest sequence number per key
 * (GROUP BY) joined back to the versions: of the dedup forms measured side by side at one thread
 * (this, `QUALIFY row_number()`, `arg_max(struct, seq) GROUP BY key`, `DISTINCT ON`), the
 * fastest on this layout (merge-read §2 gives the numbers).
 */
export function mergeQuery(files: readonly LiveFile[]): string {
  return `WITH v AS (${versionsOf(files)}),
  newest AS (SELECT key, max(_seq) AS _seq FROM v GROUP BY key)
SELECT key, i32, f, s, opt FROM v JOIN newest USING (key, _seq) WHERE _VALUE_KIND IN (0, 2)`;
}

/** Every version in the files, with its absolute sequence number as `_seq`. */
function versionsOf(files: readonly LiveFile[]): string {
  return files
    .map((f) => `SELECT *, ${f.sequenceBase}::BIGINT + _SEQUENCE_NUMBER AS _seq FROM read_parquet(${quote(f.path)})`)
    .join('\n  UNION ALL ');
}

/**
 * What a full compaction of the files writes, as a DuckDB `COPY`: the merged newest version of
 * every key (mergeQuery) with its absolute sequence number and row kind, sorted by key, into one
 * zstd Parquet file with varve's row-group size.
 */
export function compactCopy(files: readonly LiveFile[], out: string, rowGroupSize: number): string {
  return `COPY (
  WITH v AS (${versionsOf(files)}),
  newest AS (SELECT key, max(_seq) AS _seq FROM v GROUP BY key)
  SELECT key, i32, f, s, opt, _seq AS _SEQUENCE_NUMBER, _VALUE_KIND FROM v JOIN newest USING (key, _seq)
  WHERE _VALUE_KIND IN (0, 2) ORDER BY key
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
  return {
    rows: Number(rows),
    keySum,
    mix: Number(mix),
    i32Sum: Number(i32Sum),
    fUnits: Number(fUnits),
    sSum: Number(sSum),
    optCount: Number(optCount),
    optSum: Number(optSum),
  };
}
