/**
 * A keyed table with a random history of upserts and deletes (`k INT NOT NULL, v STRING, n BIGINT,
 * f DOUBLE`, one to three buckets, write-only so that every commit stays its own sorted run), and
 * its model: the newest row per key, absent when deleted. Some commits rewrite every key, so the
 * newest run wins whole; the others touch a random subset, so winners sit in every run.
 */
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { RowKind, type Row } from '../../lib/schema/types.js';
import type { ObjectStore } from '../../lib/store/object-store.js';
import type { Table } from '../../lib/table/table.js';
import type { rng } from './random.js';

export async function randomHistoryTable(
  r: ReturnType<typeof rng>,
  name: string,
  store: ObjectStore,
  opts: { minCommits: number },
): Promise<{ table: Table; model: Map<number, Row> }> {
  const table = await new FolderCatalog(store).createTable(`db.${name}`, {
    fields: parseSchemaText('k INT NOT NULL, v STRING, n BIGINT, f DOUBLE'),
    primaryKeys: ['k'],
    options: { bucket: String(r.int(1, 3)), 'write-only': 'true' },
  });
  const model = new Map<number, Row>();
  const keys = r.int(50, 3000);
  for (let c = 0, commits = r.int(opts.minCommits, 6); c < commits; c++) {
    const rows: Row[] = [];
    const kinds: number[] = [];
    const seen = new Set<number>();
    const whole = c === 0 || r.chance(0.3);
    for (let i = whole ? keys : r.int(1, keys); i > 0; i--) {
      const k = whole ? i : r.int(1, keys);
      if (seen.has(k)) continue;
      seen.add(k);
      const row: Row = { k, v: r.chance(0.2) ? null : `${name}-${c}-${k}`, n: BigInt(c * 1000 + k), f: k / (c + 1) };
      const del = c > 0 && !whole && r.chance(0.1);
      rows.push(row);
      kinds.push(del ? RowKind.DELETE : RowKind.INSERT);
      if (del) model.delete(k);
      else model.set(k, row);
    }
    await table.write(rows, { kinds });
  }
  return { table, model };
}
