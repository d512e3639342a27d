import * as arrow from 'apache-arrow';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { openDuckDB } from '../../bench/lib/duckdb.js';
import {
  CorruptMetadataError,
  InvalidArgumentError,
  ObjectNotFoundError,
  SchemaMismatchError,
  StoreUnavailableError,
} from '../../lib/errors.js';
import { arrowTypesEqual, KIND_FIELD, physicalArrowSchemaOf, SEQUENCE_FIELD } from '../../lib/format/arrow-schema.js';
import { emptyTable, rowsToTable, tableToRows } from '../../lib/format/columns.js';
import { FOOTER_FETCH_BYTES, readDataFile, readDataFileMetadata, writeDataFile } from '../../lib/format/data-file.js';
import type { DataField, Row } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { rng, testSeed } from '../helpers/random.js';
import { allTypeFields, edgeRows, field, randomRows } from './fixtures.js';

const FIELDS = allTypeFields();
const WITH_SYSTEM = [...FIELDS, SEQUENCE_FIELD, KIND_FIELD];

/** A physical table of `rows` with sequence numbers 100, 101, … and kinds cycling +I, -U, +U, -D. */
function physical(fields: DataField[], rows: Row[]): arrow.Table {
  return rowsToTable(fields, rows, {
    sequence: rows.map((_, i) => 100 + i),
    kind: rows.map((_, i) => i % 4),
  });
}

function arrayBuffer(b: Uint8Array): ArrayBuffer {
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
}

describe('writeDataFile / readDataFile', () => {
  it.each(['zstd', 'lz4', 'snappy', 'uncompressed'] as const)(
    'round-trips every type and edge value exactly (%s)',
    async (compression) => {
      // Prepare
      const table = physical(FIELDS, edgeRows());
      // Act
      const bytes = writeDataFile(table, { compression });
      const back = await readDataFile(bytes);
      // Assess
      const expected = physicalArrowSchemaOf(FIELDS);
      expect(back.schema.names).toEqual(expected.names);
      back.schema.fields.forEach((f, i) => {
        const want = expected.fields[i];
        expect(arrowTypesEqual(f.type, want.type), `${f.name}: ${f.type} vs ${want.type}`).toBe(true);
        expect(f.nullable).toBe(want.nullable);
        expect(f.metadata.get('varve.field-id')).toBe(want.metadata.get('varve.field-id'));
      });
      expect(tableToRows(back, WITH_SYSTEM)).toEqual(tableToRows(table, WITH_SYSTEM));
      expect(Object.is(tableToRows(back, FIELDS)[3].f32, -0)).toBe(true);
    },
  );

  it('writes row groups, key-value metadata, chunk statistics and dictionaries only for strings', async () => {
    const r = rng(testSeed('format.data-file.row-groups'));
    const rows = randomRows(r, FIELDS, 1000);
    const bytes = writeDataFile(physical(FIELDS, rows), {
      compression: 'zstd',
      rowGroupSize: 300,
      metadata: { 'varve.sequence-base': '42' },
    });
    const md = parquetMetadata(arrayBuffer(bytes));
    expect(md.row_groups.map((g) => Number(g.num_rows))).toEqual([300, 300, 300, 100]);
    expect(md.key_value_metadata?.find((kv) => kv.key === 'varve.sequence-base')?.value).toBe('42');
    const idStats = md.row_groups[1].columns[0].meta_data?.statistics;
    expect([idStats?.min_value, idStats?.max_value, idStats?.null_count]).toEqual([300n, 599n, 0n]);
    for (const c of md.row_groups[0].columns) {
      const name = c.meta_data!.path_in_schema[0];
      expect(c.meta_data!.encodings.includes('RLE_DICTIONARY'), name).toBe(name === 's');
    }
    expect(tableToRows(await readDataFile(bytes), FIELDS)).toEqual(rows);
  });

  it.each([
    [undefined, ['_SEQUENCE_NUMBER']],
    ['id', ['id', '_SEQUENCE_NUMBER']],
    ['i16', ['i16', '_SEQUENCE_NUMBER']],
    ['s', ['_SEQUENCE_NUMBER']],
  ] as const)(
    'delta-packs _SEQUENCE_NUMBER and an integer sortedBy column (%s), and parquet-wasm, hyparquet and DuckDB read them back exactly',
    async (sortedBy, deltaColumns) => {
      // Prepare: keys ascending, sequence numbers in no order (a key-sorted flush of shuffled
      // arrivals) with jumps up to 2^52; i16 is nullable and unsorted.
      const seed = testSeed(`format.data-file.delta.${sortedBy}`);
      const r = rng(seed);
      const n = 1000;
      const rows = randomRows(r, FIELDS, n).sort((a, b) =>
        (a.id as bigint) < (b.id as bigint) ? -1 : (a.id as bigint) > (b.id as bigint) ? 1 : 0,
      );
      const sequence = Array.from({ length: n }, (_, i) => i);
      for (let i = n - 1; i > 0; i--) {
        const j = r.int(0, i);
        [sequence[i], sequence[j]] = [sequence[j], sequence[i]];
      }
      for (let i = 0; i < n; i += 97) sequence[i] = Math.floor(r.next() * 2 ** 52);
      const table = rowsToTable(FIELDS, rows, { sequence, kind: rows.map((_, i) => i % 4) });
      // Act
      const opts = { rowGroupSize: 300, ...(sortedBy ? { sortedBy } : {}) };
      const bytes = writeDataFile(table, { compression: 'zstd', ...opts });
      // Assess: only those columns are delta-packed, and every reader sees the same values.
      const md = parquetMetadata(arrayBuffer(bytes));
      for (const g of md.row_groups) {
        for (const c of g.columns) {
          const name = c.meta_data!.path_in_schema[0];
          expect(c.meta_data!.encodings.includes('DELTA_BINARY_PACKED'), name).toBe(
            (deltaColumns as readonly string[]).includes(name),
          );
        }
      }
      const cols = ['id', 'i16', '_SEQUENCE_NUMBER'];
      const want = rows.map((row, i) => [row.id, row.i16, BigInt(sequence[i])]);
      const back = await readDataFile(bytes);
      expect(rows.map((_, i) => cols.map((c) => back.getChild(c)!.get(i)))).toEqual(want);
      // (hyparquet has no zstd: it reads the same rows written with snappy.)
      const snappy = writeDataFile(table, { compression: 'snappy', ...opts });
      const objects = (await parquetReadObjects({ file: arrayBuffer(snappy), columns: cols })) as Row[];
      expect(objects.map((o) => cols.map((c) => o[c]))).toEqual(want);
      const dir = await mkdtemp(join(tmpdir(), 'varve-delta-'));
      const duck = await openDuckDB();
      try {
        await writeFile(join(dir, 'f.parquet'), bytes);
        const reader = await duck.conn.runAndReadAll(
          `SELECT id, i16, _SEQUENCE_NUMBER FROM read_parquet('${join(dir, 'f.parquet')}', file_row_number = true) ORDER BY file_row_number`,
        );
        expect(reader.getRows(), `seed ${seed}`).toEqual(want);
      } finally {
        duck.close();
        await rm(dir, { recursive: true, force: true });
      }
    },
  );

  it('rejects a sortedBy that names no column', () => {
    const table = physical(FIELDS, randomRows(rng(2), FIELDS, 3));
    expect(() => writeDataFile(table, { compression: 'zstd', sortedBy: 'nope' })).toThrow(InvalidArgumentError);
    expect(() => writeDataFile(table, { compression: 'zstd', sortedBy: 'nope' })).toThrow(/sortedBy names nope/);
  });

  it('reads a projection in the requested order, across row groups', async () => {
    const r = rng(testSeed('format.data-file.projection'));
    const rows = randomRows(r, FIELDS, 700);
    const bytes = writeDataFile(physical(FIELDS, rows), { compression: 'snappy', rowGroupSize: 256 });
    // Act
    const proj = await readDataFile(bytes, { columns: ['_VALUE_KIND', 's', 'id', 'dec38'] });
    // Assess
    expect(proj.schema.names).toEqual(['_VALUE_KIND', 's', 'id', 'dec38']);
    const want = rows.map((row, i) => ({ _VALUE_KIND: i % 4, s: row.s, id: row.id, dec38: row.dec38 }));
    expect(tableToRows(proj, [KIND_FIELD, FIELDS[11], FIELDS[0], FIELDS[8]])).toEqual(want);
    await expect(readDataFile(bytes, { columns: ['id', 'nope'] })).rejects.toThrow(SchemaMismatchError);
    await expect(readDataFile(bytes, { columns: ['id', 'nope'] })).rejects.toThrow(/no column nope/);
  });

  it("writes each column's varve field id as the Parquet field_id (what Iceberg readers match columns by)", () => {
    // Prepare
    const table = physical(FIELDS, randomRows(rng(1), FIELDS, 5));
    // Act
    const md = parquetMetadata(arrayBuffer(writeDataFile(table, { compression: 'zstd' })));
    // Assess: the schema's leaf elements follow the root, in file order
    const ids = md.schema.slice(1).map((e) => ({ name: e.name, id: e.field_id }));
    expect(ids).toEqual(WITH_SYSTEM.map((f) => ({ name: f.name, id: f.id })));
  });

  it('writes a sliced table (non-zero offsets in bitmaps, booleans and strings)', async () => {
    const rows = edgeRows();
    const table = physical(FIELDS, rows).slice(1, 4);
    const back = await readDataFile(writeDataFile(table, { compression: 'snappy' }));
    expect(tableToRows(back, WITH_SYSTEM)).toEqual(tableToRows(table, WITH_SYSTEM));
    expect(tableToRows(back, FIELDS)).toEqual(rows.slice(1, 4));
  });

  it('writes and reads a file with no rows', async () => {
    const bytes = writeDataFile(emptyTable(physicalArrowSchemaOf(FIELDS)), { compression: 'zstd' });
    const back = await readDataFile(bytes);
    expect(back.numRows).toBe(0);
    expect(back.schema.names).toEqual(physicalArrowSchemaOf(FIELDS).names);
  });

  it('refuses a table without the system columns, unknown codecs and reserved metadata keys', () => {
    const plain = rowsToTable([field(1, 'k', 'INT')], [{ k: 1 }]);
    expect(() => writeDataFile(plain, { compression: 'zstd' })).toThrow(SchemaMismatchError);
    const t = physical([field(1, 'k', 'INT')], [{ k: 1 }]);
    expect(() => writeDataFile(t, { compression: 'brotli' as 'zstd' })).toThrow(InvalidArgumentError);
    expect(() => writeDataFile(t, { compression: 'zstd', metadata: { 'ARROW:schema': 'x' } })).toThrow(/reserved/);
    expect(() => writeDataFile(t, { compression: 'zstd', rowGroupSize: 0 })).toThrow(InvalidArgumentError);
  });

  it('reports bytes that are not Parquet as a corrupt file', async () => {
    await expect(readDataFile(new Uint8Array(64))).rejects.toThrow(CorruptMetadataError);
    await expect(readDataFile(new Uint8Array(64), { columns: ['a'] })).rejects.toThrow(CorruptMetadataError);
  });

  it('brings zoned timestamps, Date64 and large strings back to the declared types', async () => {
    // Prepare: a file as another writer might produce it.
    const n = 3;
    const seq = arrow.makeData({ type: new arrow.Int64(), length: n, data: new BigInt64Array([1n, 2n, 3n]) });
    const kind = arrow.makeData({ type: new arrow.Int8(), length: n, data: new Int8Array(n) });
    const ts = arrow.makeData({
      type: new arrow.TimestampMicrosecond('UTC'),
      length: n,
      data: new BigInt64Array([-1n, 0n, 5n]),
    });
    const d64 = arrow.makeData({
      type: new arrow.DateMillisecond(),
      length: n,
      data: new BigInt64Array([-86_400_000n, 0n, 86_400_000n * 19_000n]),
      nullBitmap: new Uint8Array([0b101]),
      nullCount: 1,
    });
    const big = arrow.makeData({
      type: new arrow.LargeUtf8(),
      length: n,
      data: new TextEncoder().encode('abcdé'),
      valueOffsets: new BigInt64Array([0n, 1n, 1n, 6n]),
    });
    const fields = [
      new arrow.Field('ts', ts.type, true),
      new arrow.Field('d', d64.type, true),
      new arrow.Field('s', big.type, true),
      new arrow.Field('_SEQUENCE_NUMBER', seq.type, false),
      new arrow.Field('_VALUE_KIND', kind.type, false),
    ];
    const schema = new arrow.Schema(fields);
    const table = new arrow.Table(
      schema,
      new arrow.RecordBatch(
        schema,
        arrow.makeData({
          type: new arrow.Struct(fields),
          length: n,
          nullCount: 0,
          children: [ts, d64, big, seq, kind],
        }),
      ),
    );
    // Act
    const back = await readDataFile(writeDataFile(table, { compression: 'snappy' }));
    // Assess
    expect(back.schema.fields.slice(0, 3).map((f) => String(f.type))).toEqual([
      'Timestamp<MICROSECOND>',
      'Date32<DAY>',
      'Utf8',
    ]);
    expect((back.schema.fields[0].type as arrow.Timestamp).timezone ?? null).toBeNull();
    const rows = tableToRows(back, [
      field(1, 'ts', 'TIMESTAMP', { precision: 6 }),
      field(2, 'd', 'DATE'),
      field(3, 's', 'STRING'),
    ]);
    expect(rows).toEqual([
      { ts: -1n, d: -1, s: 'a' },
      { ts: 0n, d: null, s: '' },
      { ts: 5n, d: 19_000, s: 'bcdé' },
    ]);
  });
});

describe('readDataFileMetadata', () => {
  it('reads row count, metadata and columns from the footer with one ranged GET', async () => {
    // Prepare: a file well over the footer fetch size, so a whole-object read would show.
    const r = rng(testSeed('format.data-file.footer'));
    const rows = randomRows(r, FIELDS, 3000);
    const bytes = writeDataFile(physical(FIELDS, rows), {
      compression: 'uncompressed',
      metadata: { owner: 'test', 'varve.sequence-base': '7' },
    });
    expect(bytes.length).toBeGreaterThan(4 * FOOTER_FETCH_BYTES);
    const store = new MemoryStore();
    await store.put('t/bucket-0/data-1.parquet', bytes);
    store.resetCallLog();
    const ranges = vi.spyOn(store, 'getRange');
    // Act
    const md = await readDataFileMetadata(store, 't/bucket-0/data-1.parquet');
    // Assess
    expect(md).toEqual({
      numRows: 3000,
      // iceberg.schema: added by every data file write (lib/format/iceberg-footer.ts)
      keyValueMetadata: {
        owner: 'test',
        'varve.sequence-base': '7',
        'iceberg.schema': expect.stringContaining('"type":"struct"'),
      },
      columns: physicalArrowSchemaOf(FIELDS).names,
      fileSize: bytes.length,
      numRowGroups: 1,
    });
    expect(store.callLog).toEqual([
      { op: 'head', key: 't/bucket-0/data-1.parquet' },
      { op: 'getRange', key: 't/bucket-0/data-1.parquet' },
    ]);
    expect(ranges.mock.calls).toEqual([['t/bucket-0/data-1.parquet', bytes.length - FOOTER_FETCH_BYTES, bytes.length]]);
  });

  it('fails with ObjectNotFoundError for a missing file and CorruptMetadataError for a non-Parquet one', async () => {
    const store = new MemoryStore();
    await expect(readDataFileMetadata(store, 'missing.parquet')).rejects.toThrow(ObjectNotFoundError);
    await store.put('junk.parquet', new Uint8Array(100).fill(7));
    await expect(readDataFileMetadata(store, 'junk.parquet')).rejects.toThrow(CorruptMetadataError);
  });

  it('passes store failures through unchanged, so a retryable one stays retryable', async () => {
    const store = new MemoryStore();
    await store.put(
      'f.parquet',
      writeDataFile(physical([field(1, 'k', 'INT')], [{ k: 1 }]), { compression: 'snappy' }),
    );
    store.injectFault({ op: 'getRange', error: ({ key }) => new StoreUnavailableError(`throttled on ${key}`) });
    await expect(readDataFileMetadata(store, 'f.parquet')).rejects.toThrow(StoreUnavailableError);
    expect((await readDataFileMetadata(store, 'f.parquet')).numRows).toBe(1);
  });
});

describe('interop: hyparquet reads varve data files', () => {
  it.each(['snappy', 'uncompressed'] as const)('with the right column names and values (%s)', async (compression) => {
    // Prepare
    const r = rng(testSeed(`format.data-file.hyparquet.${compression}`));
    const rows: Row[] = [
      ...edgeRows(),
      ...randomRows(r, FIELDS, 200).map((row, i) => ({ ...row, id: BigInt(10 + i) })),
    ];
    const bytes = writeDataFile(physical(FIELDS, rows), { compression, rowGroupSize: 64 });
    // Act
    const objects = (await parquetReadObjects({ file: arrayBuffer(bytes), utf8: false })) as Row[];
    // Assess
    expect(Object.keys(objects[0])).toEqual(physicalArrowSchemaOf(FIELDS).names);
    expect(objects).toHaveLength(rows.length);
    const plain = ['id', 'b', 'i8', 'i16', 'i32', 'i64', 'f32', 'f64', 's', 'bin'];
    objects.forEach((o, i) => {
      const want = rows[i];
      for (const c of plain) expect(o[c], `row ${i} ${c}`).toEqual(want[c]);
      expect(o._SEQUENCE_NUMBER).toBe(BigInt(100 + i));
      expect(o._VALUE_KIND).toBe(i % 4);
      const day = o.day as unknown as Date | null;
      expect(day === null ? null : day.getTime() / 86_400_000).toBe(want.day);
      const ts3 = o.ts3 as unknown as Date | null;
      expect(ts3 === null ? null : BigInt(ts3.getTime())).toBe(want.ts3);
      expect(o.dec10).toBe(want.dec10 === null ? null : Number(want.dec10));
    });
  });
});
