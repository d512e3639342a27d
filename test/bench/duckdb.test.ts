import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { expectedChecksum, tableChecksum } from '../../bench/lib/checksum.js';
import { range, sampleKeys } from '../../bench/lib/data.js';
import { duckChecksum, mergeQuery, openDuckDB } from '../../bench/lib/duckdb.js';
import { createBenchTable, liveFiles, writeVersion } from '../../bench/lib/tables.js';

describe("DuckDB merge query over a table's files", () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("picks each key's newest version from relative sequence numbers and file bases, as varve does", async () => {
    // Prepare: every key at version 0, then two overlapping updates of sampled keys.
    dir = await mkdtemp(join(tmpdir(), 'varve-bench-duck-'));
    const table = await createBenchTable(dir);
    const versions = new Int32Array(2000);
    await writeVersion(table, range(2000), 0);
    for (const v of [1, 2]) {
      const keys = sampleKeys(2000, 700, v);
      await writeVersion(table, keys, v);
      for (const k of keys) versions[k] = v;
    }
    const files = await liveFiles(table, (await table.snapshots.latest())!);
    const duck = await openDuckDB();
    try {
      // Act
      await duck.conn.run(`CREATE TEMP TABLE merged AS ${mergeQuery(files)}`);
      const fromDuck = await duckChecksum(duck.conn, 'merged');
      // Assess
      const expected = expectedChecksum(range(2000), versions);
      expect(fromDuck).toEqual(expected);
      expect(tableChecksum(await table.read())).toEqual(expected);
    } finally {
      duck.close();
    }
  });
});
