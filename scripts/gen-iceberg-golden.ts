/**
 * Writes the golden Iceberg metadata under test/iceberg/golden/<case>/: the metadata folder the
 * export writes for small fixed tables (a partitioned table of every column type after two full
 * compactions, so its last manifest holds ADDED, EXISTING and DELETED entries; an unpartitioned
 * table; a deletion-vector table exported in format 2, upgraded to format 3, whose v3 delete
 * manifests point into its Puffin files), as the commits and compactions export it on their own. The tables live in memory at
 * s3://varve-golden/wh; reruns differ in file names, times and Avro sync markers, not in shape.
 * test/iceberg/golden.test.ts validates every file against the Iceberg spec.
 *
 *   npx tsx scripts/gen-iceberg-golden.ts
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FolderCatalog } from '../lib/catalog/folder-catalog.js';
import { icebergLocation } from '../lib/iceberg/iceberg-metadata.js';
import { compactTable } from '../lib/maintenance/compact.js';
import { parseSchemaText } from '../lib/schema/parse.js';
import { listAll } from '../lib/store/object-store.js';
import { MemoryStore } from '../lib/store/memory-store.js';
import type { Table } from '../lib/table/table.js';

const OUT = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'test/iceberg/golden');

async function dump(name: string, table: Table): Promise<void> {
  const dir = icebergLocation(table)!.metadataDir;
  const out = join(OUT, name);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  for (const o of await listAll(table.store, dir))
    writeFileSync(join(out, o.key.slice(dir.length)), (await table.store.get(o.key)).body);
}

async function main(): Promise<void> {
  const store = new MemoryStore({ uri: 's3://varve-golden/wh' });
  const catalog = new FolderCatalog(store);
  const opts = { 'metadata.iceberg.storage': 'table-location', 'write-only': 'true' };

  const all = await catalog.createTable('db.all_types', {
    fields: parseSchemaText(
      'region STRING NOT NULL, day DATE NOT NULL, id BIGINT NOT NULL, b BOOLEAN, i8 TINYINT, i16 SMALLINT, i32 INT, f32 FLOAT, f64 DOUBLE, ' +
        'dec DECIMAL(38,10), s STRING, bin BYTES, ts3 TIMESTAMP(3), ts6 TIMESTAMP(6)',
    ),
    primaryKeys: ['region', 'day', 'id'],
    partitionKeys: ['region', 'day'],
    options: opts,
  });
  const row = (region: string, day: number, id: bigint, v: number) => ({
    region,
    day,
    id,
    b: v % 2 === 0,
    i8: v,
    i16: v * 100,
    i32: v * 100000,
    f32: v / 4,
    f64: -v / 8,
    dec: `${v}.0000000001`,
    s: `s-${v}`,
    bin: new Uint8Array([v, 255 - v]),
    ts3: 1_700_000_000_000n + BigInt(v),
    ts6: 1_700_000_000_000_000n + BigInt(v),
  });
  await all.write([row('eu', 19000, 1n, 1), row('eu', 19000, 2n, 2), row('us/west', -1, 3n, 3)]);
  await compactTable(all, { full: true });
  await all.write([row('us/west', -1, 3n, 4)]);
  await compactTable(all, { full: true });

  const plain = await catalog.createTable('db.unpartitioned', {
    fields: parseSchemaText('id INT NOT NULL, name STRING'),
    primaryKeys: ['id'],
    options: { ...opts, bucket: '2' },
  });
  await plain.write([
    { id: 1, name: 'a' },
    { id: 2, name: 'b' },
    { id: 3, name: null },
  ]);
  await compactTable(plain, { full: true });

  // A deletion-vector table: v2 exports with position delete files, then 2 -> 3 (deletion vectors, row lineage).
  let dv = await catalog.createTable('db.deletion_vectors', {
    fields: parseSchemaText('region STRING NOT NULL, id INT NOT NULL, v INT'),
    primaryKeys: ['region', 'id'],
    partitionKeys: ['region'],
    options: { 'metadata.iceberg.storage': 'table-location', bucket: '1', 'deletion-vectors.enabled': 'true' },
  });
  await dv.write([1, 2, 3].map((id) => ({ region: 'eu', id, v: id })));
  await dv.write([{ region: 'eu', id: 2, v: 20 }]);
  dv = (await dv.alter([{ kind: 'set-option', key: 'metadata.iceberg.format-version', value: '3' }])).table;
  await dv.write([{ region: 'eu', id: 3, v: 30 }]);
  await dv.write([{ region: 'eu', id: 1, v: 10 }]);

  await dump('all-types-partitioned', all);
  await dump('unpartitioned', plain);
  await dump('deletion-vectors-v3', dv);
  console.log(`wrote ${OUT}`);
}

void main();
