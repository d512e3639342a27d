/**
 * What an Iceberg reader finds in a varve data file (issue 31 §4): the system columns' Parquet
 * field ids lie outside Iceberg's reserved range (MAX_VALUE - 200 and up), the footer's
 * `iceberg.schema` names each column as this file names it (so a column renamed since is found
 * by its old name), and files written with the old ids still read.
 */
import * as arrow from 'apache-arrow';
import { parquetMetadata } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { physicalArrowSchemaOf, toArrowField } from '../../lib/format/arrow-schema.js';
import { rowsToTable, tableToRows } from '../../lib/format/columns.js';
import { readDataFile, writeDataFile } from '../../lib/format/data-file.js';
import { evolveTable } from '../../lib/format/evolve.js';
import { ICEBERG_SCHEMA_KEY } from '../../lib/format/iceberg-footer.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { dataFileKey } from '../../lib/manifest/table-paths.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { KIND_COLUMN, SEQUENCE_COLUMN, type DataField } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';

/** Iceberg reserves field ids from Integer.MAX_VALUE - 200 up for its metadata columns (_file, _pos, ...). */
const ICEBERG_RESERVED_FROM = 2147483647 - 200;

function footer(bytes: Uint8Array) {
  const md = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
  const kv = Object.fromEntries((md.key_value_metadata ?? []).map((e) => [e.key, e.value]));
  return { fieldIds: Object.fromEntries(md.schema.slice(1).map((e) => [e.name, e.field_id])), kv };
}

describe('data file footers for Iceberg readers', () => {
  it("carry iceberg.schema with the names of the file, and system field ids outside Iceberg's reserved range", async () => {
    // Prepare: a write, a rename of `name` to `label`, another write
    const store = new MemoryStore();
    const table = await new FolderCatalog(store).createTable('db.t', {
      fields: parseSchemaText('id INT NOT NULL, name STRING, amount DECIMAL(9,2)'),
      primaryKeys: ['id'],
      options: { bucket: '1', 'write-only': 'true' },
    });
    await table.write([{ id: 1, name: 'a', amount: '1.50' }]);
    await table.alter([{ kind: 'rename-column', from: 'name', to: 'label' }]);
    const renamed = await table.latest();
    await renamed.write([{ id: 2, label: 'b', amount: '2.00' }]);
    // Act
    const live = await readLiveFiles(store, renamed.path, (await renamed.snapshots.latest())!, {});
    const footers = await Promise.all(
      live
        .sort((a, b) => a.file.schemaId - b.file.schemaId)
        .map(async (e) =>
          footer((await store.get(dataFileKey(renamed.path, e.partition, e.bucket, e.file.fileName))).body),
        ),
    );
    // Assess
    expect(footers.map((f) => JSON.parse(f.kv[ICEBERG_SCHEMA_KEY] ?? 'null'))).toEqual([
      {
        type: 'struct',
        'schema-id': 0,
        fields: [
          { id: 0, name: 'id', required: true, type: 'int' },
          { id: 1, name: 'name', required: false, type: 'string' },
          { id: 2, name: 'amount', required: false, type: 'decimal(9, 2)' },
        ],
      },
      {
        type: 'struct',
        'schema-id': 1,
        fields: [
          { id: 0, name: 'id', required: true, type: 'int' },
          { id: 1, name: 'label', required: false, type: 'string' },
          { id: 2, name: 'amount', required: false, type: 'decimal(9, 2)' },
        ],
      },
    ]);
    for (const f of footers) {
      expect(f.fieldIds[SEQUENCE_COLUMN]).toBeLessThan(ICEBERG_RESERVED_FROM);
      expect(f.fieldIds[KIND_COLUMN]).toBeLessThan(ICEBERG_RESERVED_FROM);
      expect(f.fieldIds[SEQUENCE_COLUMN]).toBeGreaterThan(1 << 30);
      expect(f.fieldIds.amount).toBe(2);
    }
  });

  it('still reads a file whose system columns carry the old ids (Integer.MAX_VALUE - 1 and - 2)', async () => {
    // Prepare: a data file as varve wrote it before, system columns under Paimon's ids
    const fields: DataField[] = parseSchemaText('id INT NOT NULL, v STRING').map((f, i) => ({ ...f, id: i + 1 }));
    const now = physicalArrowSchemaOf(fields);
    const oldIds = [2147483646, 2147483645];
    const schema = new arrow.Schema([
      ...fields.map(toArrowField),
      ...now.fields.slice(-2).map(
        (f, i) =>
          new arrow.Field(
            f.name,
            f.type,
            false,
            new Map([
              ['varve.field-id', String(oldIds[i])],
              ['PARQUET:field_id', String(oldIds[i])],
            ]),
          ),
      ),
    ]);
    const data = rowsToTable(
      fields,
      [
        { id: 1, v: 'x' },
        { id: 2, v: null },
      ],
      { sequence: BigInt64Array.from([7n, 8n]), kind: [0, 3] },
    );
    const bytes = writeDataFile(
      new arrow.Table(
        schema,
        data.batches.map((b) => new arrow.RecordBatch(schema, b.data)),
      ),
      { compression: 'zstd' },
    );
    expect(footer(bytes).fieldIds[SEQUENCE_COLUMN]).toBe(2147483646);
    // Act
    const read = evolveTable(await readDataFile(bytes), fields, fields);
    // Assess
    expect(
      tableToRows(
        read,
        read.schema.fields.map((f, i) =>
          i < 2
            ? fields[i]
            : ({ id: 0, name: f.name, type: { root: i === 2 ? 'BIGINT' : 'TINYINT', nullable: false } } as DataField),
        ),
      ),
    ).toEqual([
      { id: 1, v: 'x', [SEQUENCE_COLUMN]: 7n, [KIND_COLUMN]: 0 },
      { id: 2, v: null, [SEQUENCE_COLUMN]: 8n, [KIND_COLUMN]: 3 },
    ]);
  });
});
