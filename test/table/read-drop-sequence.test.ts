/**
 * A read that returns no system columns merges without `_SEQUENCE_NUMBER` (by sequence range, the
 * winners' stored numbers are never decoded). Random histories (upserts, deletes, winners in every
 * run, one to three buckets): the read equals the merge that keeps the sequence numbers, cut to the
 * user columns, byte for byte, inline and on the merge pool; a read with keepDeletes still returns
 * every winner's sequence number.
 */
import * as arrow from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { concatTables } from '../../lib/format/columns.js';
import { physicalArrowSchema } from '../../lib/format/arrow-schema.js';
import { configureDecodePool } from '../../lib/format/decode-pool.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { KIND_COLUMN, RowKind, SEQUENCE_COLUMN, type Row } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { mergePool } from '../../lib/table/merge-pool.js';
import { mergeBuckets, project } from '../../lib/table/read.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed } from '../helpers/random.js';

afterAll(async () => {
  await mergePool().close();
  await configureDecodePool({ restart: true });
});

/** A table with a random history of upserts and deletes. */
async function randomTable(r: ReturnType<typeof rng>, name: string): Promise<Table> {
  const table = await new FolderCatalog(new MemoryStore()).createTable(`db.${name}`, {
    fields: parseSchemaText('k INT NOT NULL, v STRING, n BIGINT, f DOUBLE'),
    primaryKeys: ['k'],
    options: { bucket: String(r.int(1, 3)), 'write-only': 'true' },
  });
  const keys = r.int(50, 3000);
  for (let c = 0, commits = r.int(1, 6); c < commits; c++) {
    const rows: Row[] = [];
    const kinds: number[] = [];
    const seen = new Set<number>();
    const whole = c === 0 || r.chance(0.3);
    for (let i = whole ? keys : r.int(1, keys); i > 0; i--) {
      const k = whole ? i : r.int(1, keys);
      if (seen.has(k)) continue;
      seen.add(k);
      rows.push({ k, v: r.chance(0.2) ? null : `${name}-${c}-${k}`, n: BigInt(c * 1000 + k), f: k / (c + 1) });
      kinds.push(c > 0 && !whole && r.chance(0.1) ? RowKind.DELETE : RowKind.INSERT);
    }
    await table.write(rows, { kinds });
  }
  return table;
}

/** The merge of every live file keeping `_SEQUENCE_NUMBER` (the reference). */
async function fullMerge(table: Table): Promise<arrow.Table> {
  const snapshot = (await table.snapshots.latest())!;
  const merged = await mergeBuckets(table, await readLiveFiles(table.store, table.path, snapshot), true);
  return concatTables(merged, physicalArrowSchema(table.schema));
}

const bytes = (t: arrow.Table) => Buffer.from(arrow.tableToIPC(t, 'stream'));

describe('a read without system columns merges without _SEQUENCE_NUMBER', () => {
  it('returns what the merge keeping sequence numbers returns, inline and on the merge pool (randomized)', async () => {
    const seed = testSeed('read-drop-sequence');
    const r = rng(seed);
    for (let t = 0; t < 6; t++) {
      const table = await randomTable(r, `t${t}`);
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
        const reference2 = await mergeBuckets(table, entries, false);
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
