/**
 * A read that returns no system columns merges without `_SEQUENCE_NUMBER` (by sequence range, the
 * winners' stored numbers are never decoded). Random histories (upserts, deletes, winners in every
 * run, one to three buckets): the read equals the merge that keeps the sequence numbers, cut to the
 * user columns, byte for byte, inline and on the merge pool; a read with keepDeletes still returns
 * every winner's sequence number.
 */
import * as arrow from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { concatTables } from '../../lib/format/columns.js';
import { physicalArrowSchema } from '../../lib/format/arrow-schema.js';
import { configureDecodePool } from '../../lib/format/decode-pool.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { KIND_COLUMN, SEQUENCE_COLUMN } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { mergePool } from '../../lib/table/merge-pool.js';
import { mergeBuckets, project } from '../../lib/table/read.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed } from '../helpers/random.js';
import { randomHistoryTable } from '../helpers/random-history.js';

afterAll(async () => {
  await mergePool().close();
  await configureDecodePool({ restart: true });
});

/** The merge of every live file keeping `_SEQUENCE_NUMBER` (the reference). */
async function fullMerge(table: Table): Promise<arrow.Table> {
  const snapshot = (await table.snapshots.latest())!;
  const merged = await mergeBuckets(table, await readLiveFiles(table.store, table.path, snapshot), {
    dropDeletes: true,
  });
  return concatTables(merged, physicalArrowSchema(table.schema));
}

const bytes = (t: arrow.Table) => Buffer.from(arrow.tableToIPC(t, 'stream'));

describe('a read without system columns merges without _SEQUENCE_NUMBER', () => {
  it('returns what the merge keeping sequence numbers returns, inline and on the merge pool (randomized)', async () => {
    const seed = testSeed('read-drop-sequence');
    const r = rng(seed);
    for (let t = 0; t < 6; t++) {
      const table = (await randomHistoryTable(r, `t${t}`, new MemoryStore(), { minCommits: 1 })).table;
      for (const pool of [false, true]) {
        const what = `table ${t}, ${pool ? 'merge pool' : 'inline'} (seed ${seed})`;
        await configureDecodePool(pool ? { threads: 2, minBytes: 0 } : { threads: 0 });
        const reference = await fullMerge(table);
        // The merge that drops the column has no such column at all (nothing stands in for it).
        const snapshot = (await table.snapshots.latest())!;
        const entries = await readLiveFiles(table.store, table.path, snapshot);
        const dropped = await mergeBuckets(table, entries, { dropDeletes: true, dropSequence: true });
        for (const d of dropped)
          expect(
            d.schema.fields.map((f) => f.name),
            what,
          ).not.toContain(SEQUENCE_COLUMN);
        const read = await table.read();
        expect(read.numRows, what).toBe(reference.numRows);
        expect(bytes(read).equals(bytes(project(reference, undefined))), what).toBe(true);
        // keepDeletes returns the system columns: the sequence numbers are still every winner's own.
        const audit = await table.read({ keepDeletes: true });
        const keptSeq = audit.getChild(SEQUENCE_COLUMN)!.toArray();
        const reference2 = await mergeBuckets(table, entries, { dropDeletes: false });
        const seq2 = concatTables(reference2, physicalArrowSchema(table.schema)).getChild(SEQUENCE_COLUMN)!.toArray();
        expect(Array.from(keptSeq), what).toEqual(Array.from(seq2));
        expect(
          audit.schema.fields.map((f) => f.name),
          what,
        ).toContain(KIND_COLUMN);
      }
    }
    expect(mergePool().started).toBeGreaterThan(0);
  });
});
