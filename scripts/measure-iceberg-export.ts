/**
 * The cost of the Iceberg export per exporting commit: store requests by kind and bytes written,
 * for tables of 1 to 64 highest-level files, first export and a later one (which reads the
 * previous manifest back). Also what an APPEND-only commit costs the export check. In memory.
 *
 *   npx tsx scripts/measure-iceberg-export.ts
 */
import { FolderCatalog } from '../lib/catalog/folder-catalog.js';
import { exportIceberg } from '../lib/iceberg/export.js';
import { exportIcebergIfDue } from '../lib/iceberg/export-trigger.js';
import { compactTable } from '../lib/maintenance/compact.js';
import { parseSchemaText } from '../lib/schema/parse.js';
import { MemoryStore, type StoreOp } from '../lib/store/memory-store.js';
import { Table } from '../lib/table/table.js';

function requests(store: MemoryStore): string {
  return (Object.entries(store.calls) as Array<[StoreOp, number]>)
    .filter(([, n]) => n > 0)
    .map(([op, n]) => `${op} ${n}`)
    .join(', ');
}

async function main(): Promise<void> {
  console.log('| top-level files | export | requests | bytes written |');
  console.log('|---|---|---|---|');
  for (const [partitions, buckets] of [
    [1, 1],
    [4, 4],
    [16, 4],
  ] as const) {
    const store = new MemoryStore({ uri: 's3://bucket/wh' });
    const table = await new FolderCatalog(store).createTable('db.t', {
      fields: parseSchemaText('p INT NOT NULL, id INT NOT NULL, v STRING'),
      primaryKeys: ['p', 'id'],
      partitionKeys: ['p'],
      options: { 'metadata.iceberg.storage': 'table-location', bucket: String(buckets), 'write-only': 'true' },
    });
    // Writes and compactions go through a handle with the export off, so the exports below are
    // the only ones and are counted alone.
    const writer = new Table(store, table.name, table.path, {
      ...table.schema,
      options: { ...table.schema.options, 'metadata.iceberg.storage': 'disabled' },
    });
    const rows = (v: string) =>
      Array.from({ length: partitions * buckets * 8 }, (_, i) => ({ p: i % partitions, id: i, v }));
    await writer.write(rows('a'));
    store.resetCallLog();
    const r0 = await exportIcebergIfDue(table);
    const files = partitions * buckets;
    const label = (what: string) => `| ${files} | ${what} |`;
    console.log(`${label('first commit (empty view)')} ${requests(store)} | ${r0?.bytesWritten} |`);
    await writer.write(rows('b'));
    store.resetCallLog();
    await exportIcebergIfDue(table);
    console.log(`${label('check after an APPEND (nothing due)')} ${requests(store)} | 0 |`);
    await compactTable(writer, { full: true });
    store.resetCallLog();
    const r = await exportIceberg(table);
    console.log(`${label('after a full compaction')} ${requests(store)} | ${r.bytesWritten} |`);
    await writer.write(rows('c'));
    await compactTable(writer, { full: true });
    store.resetCallLog();
    const r2 = await exportIceberg(table);
    console.log(`${label('next full compaction')} ${requests(store)} | ${r2.bytesWritten} |`);
  }
}

void main();
