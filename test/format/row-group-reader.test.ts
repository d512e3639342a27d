import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import { parquetMetadata } from 'hyparquet';
import { readParquet } from 'parquet-wasm';
import { describe, expect, it, vi } from 'vitest';
import { DuckDBInstance } from '@duckdb/node-api';
import {
  CorruptMetadataError,
  DataFileChecksumError,
  ObjectNotFoundError,
  SchemaMismatchError,
  StoreUnavailableError,
} from '../../lib/errors.js';
import { KIND_FIELD, SEQUENCE_FIELD } from '../../lib/format/arrow-schema.js';
import { rowsToTable, tableToRows } from '../../lib/format/columns.js';
import {
  openDataFile,
  openDataFileRanged,
  readDataFile,
  readDataFileRanged,
  readDataFileRowGroups,
  writeDataFile,
  type DataFileCompression,
} from '../../lib/format/data-file.js';
import {
  DECODE_BATCH_ROWS,
  FOOTER_READ_BYTES,
  readParquetFooter,
  readRowGroupsRanged,
} from '../../lib/format/row-group-reader.js';
import { decodeStruct, encodeStruct } from '../../lib/format/thrift-compact.js';
import type { DataField, Row } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { allTypeFields, field, randomRows } from './fixtures.js';

const FIELDS = allTypeFields();
const WITH_SYSTEM = [...FIELDS, SEQUENCE_FIELD, KIND_FIELD];

function physical(fields: DataField[], rows: Row[]): arrow.Table {
  return rowsToTable(fields, rows, { sequence: rows.map((_, i) => 100 + i), kind: rows.map((_, i) => i % 4) });
}

async function collect(it: AsyncIterable<arrow.Table>): Promise<arrow.Table[]> {
  const out: arrow.Table[] = [];
  for await (const t of it) out.push(t);
  return out;
}

function rowsOf(tables: arrow.Table[], fields: DataField[]): Row[] {
  return tables.flatMap((t) => tableToRows(t, fields));
}

/** A random subset of the columns (at least one) in a random order. */
function randomProjection(r: Rng, names: string[]): string[] {
  const picked = names.filter(() => r.chance(0.4));
  if (picked.length === 0) picked.push(r.pick(names));
  for (let i = picked.length - 1; i > 0; i--) {
    const j = r.int(0, i);
    [picked[i], picked[j]] = [picked[j], picked[i]];
  }
  return picked;
}

describe('readDataFileRowGroups (ranged)', () => {
  it('reads what the whole-file read does, row group by row group, with and without a projection (randomized)', async () => {
    const seed = testSeed('format.row-group-reader.equality');
    const r = rng(seed);
    const store = new MemoryStore();
    for (let round = 0; round < 5; round++) {
      // Prepare: every column type, nulls, dictionary strings, several row groups of a random size.
      const compression = r.pick<DataFileCompression>(['zstd', 'snappy', 'uncompressed']);
      const rows = randomRows(r, FIELDS, r.int(1, 700));
      const rowGroupSize = r.int(40, 400);
      const bytes = writeDataFile(physical(FIELDS, rows), {
        compression,
        rowGroupSize,
        metadata: { 'varve.sequence-base': String(round) },
      });
      const key = `t/f-${round}.parquet`;
      await store.put(key, bytes);
      const whole = await readDataFile(bytes);
      // Act
      const groups = await collect(readDataFileRowGroups(store, key, bytes.length));
      // Assess: one table per row group, the same rows and types as the whole-file read.
      expect(
        groups.map((g) => g.numRows),
        `seed ${seed} round ${round}`,
      ).toEqual(
        parquetMetadata(
          bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer,
        ).row_groups.map((g) => Number(g.num_rows)),
      );
      for (const g of groups)
        expect(g.schema.fields.map((f) => `${f.name}:${f.type}`)).toEqual(
          whole.schema.fields.map((f) => `${f.name}:${f.type}`),
        );
      expect(rowsOf(groups, WITH_SYSTEM), `seed ${seed} round ${round}`).toEqual(tableToRows(whole, WITH_SYSTEM));
      // A projection: only those columns, in the order asked.
      const columns = randomProjection(r, whole.schema.names as string[]);
      const projected = await collect(readDataFileRowGroups(store, key, undefined, { columns }));
      const wanted = columns.map((c) => WITH_SYSTEM.find((f) => f.name === c)!);
      for (const g of projected) expect(g.schema.names).toEqual(columns);
      expect(rowsOf(projected, wanted), `seed ${seed} round ${round} columns ${columns.join(',')}`).toEqual(
        tableToRows(await readDataFile(bytes, { columns }), wanted),
      );
    }
  });

  it('fetches the footer and then one row group at a time: no read is larger than the largest row group or the footer read', async () => {
    // Prepare: a file of many row groups, well over the footer read.
    const r = rng(testSeed('format.row-group-reader.bytes'));
    const rows = randomRows(r, FIELDS, 4000);
    const bytes = writeDataFile(physical(FIELDS, rows), { compression: 'uncompressed', rowGroupSize: 500 });
    const md = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer);
    const largestGroup = Math.max(
      ...md.row_groups.map(
        (g) =>
          Number(g.total_compressed_size ?? 0n) ||
          g.columns.reduce((n, c) => n + Number(c.meta_data!.total_compressed_size), 0),
      ),
    );
    expect(md.row_groups.length).toBe(8);
    expect(bytes.length).toBeGreaterThan(4 * largestGroup);
    const store = new MemoryStore();
    await store.put('f.parquet', bytes);
    const gets = vi.spyOn(store, 'get');
    const ranges = vi.spyOn(store, 'getRange');
    // Act: read while recording how many bytes each read fetched, and the most held at once.
    let fetchedBeforeFirstGroup = 0;
    let groupsSeen = 0;
    const sizes = () => ranges.mock.calls.map(([, s, e]) => e - s);
    for await (const g of readDataFileRowGroups(store, 'f.parquet', bytes.length)) {
      if (groupsSeen++ === 0) fetchedBeforeFirstGroup = sizes().reduce((a, b) => a + b, 0);
      expect(g.numRows).toBe(500);
    }
    // Assess: never a whole-object GET; each ranged read is the footer read or at most one row group.
    expect(gets).not.toHaveBeenCalled();
    for (const s of sizes()) expect(s).toBeLessThanOrEqual(Math.max(largestGroup, FOOTER_READ_BYTES));
    expect(ranges).toHaveBeenCalledTimes(1 + 8);
    expect(fetchedBeforeFirstGroup).toBeLessThanOrEqual(FOOTER_READ_BYTES + largestGroup);
    // A projection of one column fetches only that column's chunks.
    ranges.mockClear();
    const ids = await collect(readDataFileRowGroups(store, 'f.parquet', bytes.length, { columns: ['id'] }));
    expect(rowsOf(ids, [FIELDS[0]])).toEqual(rows.map((row) => ({ id: row.id })));
    const idBytes = md.row_groups.reduce((n, g) => n + Number(g.columns[0].meta_data!.total_compressed_size), 0);
    expect(
      sizes()
        .slice(1)
        .reduce((a, b) => a + b, 0),
    ).toBe(idBytes);
  });

  it('decodes a large row group in batches of at most DECODE_BATCH_ROWS rows, and a consumer may stop early', async () => {
    const k = field(1, 'k', 'INT', { nullable: false });
    const rows = Array.from({ length: 150_000 }, (_, i) => ({ k: i }));
    const bytes = writeDataFile(physical([k], rows), { compression: 'snappy', rowGroupSize: 140_000 });
    const store = new MemoryStore();
    await store.put('f.parquet', bytes);
    const batches = await collect(readDataFileRowGroups(store, 'f.parquet', bytes.length, { columns: ['k'] }));
    const B = DECODE_BATCH_ROWS;
    const first = [];
    for (let left = 140_000; left > 0; left -= B) first.push(Math.min(B, left));
    expect(batches.map((b) => b.numRows)).toEqual([...first, 10_000]);
    let at = 0;
    for (const b of batches) {
      const col = b.getChild('k')!;
      for (let i = 0; i < b.numRows; i += 997) expect(col.get(i)).toBe(at + i);
      at += b.numRows;
    }
    for await (const b of readDataFileRowGroups(store, 'f.parquet', bytes.length)) {
      expect(b.numRows).toBe(DECODE_BATCH_ROWS);
      break;
    }
    expect((await collect(readDataFileRowGroups(store, 'f.parquet'))).reduce((n, b) => n + b.numRows, 0)).toBe(150_000);
  });

  it('reads a footer longer than the first footer read with a second read', async () => {
    const big = 'x'.repeat(FOOTER_READ_BYTES + 5000);
    const bytes = writeDataFile(physical([field(1, 'k', 'INT')], [{ k: 1 }, { k: 2 }]), {
      compression: 'snappy',
      metadata: { big },
    });
    const store = new MemoryStore();
    await store.put('f.parquet', bytes);
    const ranges = vi.spyOn(store, 'getRange');
    const groups = await collect(readDataFileRowGroups(store, 'f.parquet'));
    expect(rowsOf(groups, [field(1, 'k', 'INT')])).toEqual([{ k: 1 }, { k: 2 }]);
    expect(ranges).toHaveBeenCalledTimes(3); // footer tail, the rest of the footer, the row group
  });

  it('passes store failures through unchanged (a throttled read stays retryable) and reports missing and corrupt files', async () => {
    const store = new MemoryStore();
    // 160 KB in 5 row groups: the first ones lie before the footer read's 64 KiB.
    const bytes = writeDataFile(
      physical(
        [field(1, 'k', 'INT')],
        Array.from({ length: 40_000 }, (_, i) => ({ k: i })),
      ),
      { compression: 'uncompressed', rowGroupSize: 8_000 },
    );
    expect(bytes.length).toBeGreaterThan(2 * FOOTER_READ_BYTES);
    await store.put('f.parquet', bytes);
    // The third ranged read (the second row group's) fails: the error is the store's, and a new read works.
    store.injectFault({ op: 'getRange', nth: 3, error: ({ key }) => new StoreUnavailableError(`throttled on ${key}`) });
    await expect(collect(readDataFileRowGroups(store, 'f.parquet', bytes.length))).rejects.toThrow(
      StoreUnavailableError,
    );
    expect((await collect(readDataFileRowGroups(store, 'f.parquet', bytes.length))).length).toBe(5);
    await expect(collect(readDataFileRowGroups(store, 'missing.parquet'))).rejects.toThrow(ObjectNotFoundError);
    await expect(collect(readDataFileRowGroups(store, 'missing.parquet', 100))).rejects.toThrow(ObjectNotFoundError);
    // A recorded size that is not the object's, a file that is not Parquet, a footer that lies.
    // A file shorter than its manifest entry says was cut short: damaged (data-file-checksum.ts).
    await expect(collect(readDataFileRowGroups(store, 'f.parquet', bytes.length + 10))).rejects.toThrow(
      DataFileChecksumError,
    );
    await expect(collect(readDataFileRowGroups(store, 'f.parquet', bytes.length - 10))).rejects.toThrow(
      CorruptMetadataError,
    );
    await store.put('junk.parquet', new Uint8Array(100).fill(7));
    await expect(collect(readDataFileRowGroups(store, 'junk.parquet'))).rejects.toThrow(CorruptMetadataError);
    const broken = bytes.slice();
    broken.fill(0xff, bytes.length - 40, bytes.length - 8); // the end of the footer
    await store.put('broken.parquet', broken);
    await expect(collect(readDataFileRowGroups(store, 'broken.parquet'))).rejects.toThrow(CorruptMetadataError);
    await expect(collect(readDataFileRowGroups(store, 'f.parquet', undefined, { columns: ['nope'] }))).rejects.toThrow(
      SchemaMismatchError,
    );
  });
});

describe('openDataFileRanged / readDataFileRanged (the decoder of Table.read by range)', () => {
  it('decode what the whole-file decoder does, for projections and row group subsets, fetching only those chunks (randomized)', async () => {
    const seed = testSeed('format.row-group-reader.decoder');
    const r = rng(seed);
    const store = new MemoryStore();
    for (let round = 0; round < 4; round++) {
      // Prepare: every column type in a file of several row groups.
      const compression = r.pick<DataFileCompression>(['zstd', 'snappy', 'uncompressed']);
      const rows = randomRows(r, FIELDS, r.int(300, 900));
      const bytes = writeDataFile(physical(FIELDS, rows), { compression, rowGroupSize: r.int(60, 250) });
      const key = `t/d-${round}.parquet`;
      await store.put(key, bytes);
      const whole = await openDataFile(bytes);
      const gets = vi.spyOn(store, 'get');
      const ranges = vi.spyOn(store, 'getRange');
      try {
        // Act: the whole table, then a projection of some row groups.
        const all = await readDataFileRanged(store, key, bytes.length);
        const ranged = await openDataFileRanged(store, key, round % 2 ? undefined : bytes.length);
        const columns = randomProjection(r, whole.columns);
        const groups = whole.rowGroupRows.map((_, g) => g).filter(() => r.chance(0.5));
        ranges.mockClear();
        const part = await ranged.readRowGroups(columns, groups);
        const fetched = ranges.mock.calls.reduce((n, [, s, e]) => n + (e - s), 0);
        // Assess: the same rows and types as the whole-file decode; one batch per row group.
        const msg = `seed ${seed} round ${round}`;
        expect(ranged.columns, msg).toEqual(whole.columns);
        expect(ranged.rowGroupRows, msg).toEqual(whole.rowGroupRows);
        expect(
          all.batches.map((b) => b.numRows),
          msg,
        ).toEqual(whole.rowGroupRows);
        expect(tableToRows(all, WITH_SYSTEM), msg).toEqual(tableToRows(await readDataFile(bytes), WITH_SYSTEM));
        const wanted = columns.map((c) => WITH_SYSTEM.find((f) => f.name === c)!);
        const expected = await whole.readRowGroups(columns, groups);
        expect(
          part.map((t) => t.schema.fields.map((f) => `${f.name}:${f.type}`)),
          msg,
        ).toEqual(expected.map((t) => t.schema.fields.map((f) => `${f.name}:${f.type}`)));
        expect(rowsOf(part, wanted), msg).toEqual(rowsOf(expected, wanted));
        // Only the asked chunks were fetched, and never the whole object.
        const md = parquetMetadata(
          bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer,
        );
        // Neighbouring chunks of one row group may be fetched together (a gap under 256 KiB), never
        // other row groups (chunks inside the footer read's last 64 KiB are not fetched again).
        const groupBytes = groups.reduce(
          (n, g) => n + md.row_groups[g].columns.reduce((m, c) => m + Number(c.meta_data!.total_compressed_size), 0),
          0,
        );
        expect(fetched, msg).toBeLessThanOrEqual(groupBytes);
        expect(gets, msg).not.toHaveBeenCalled();
        ranged.free();
        await expect(ranged.readRowGroups(columns)).rejects.toThrow(/freed/);
        await expect(openDataFileRanged(store, key).then((d) => d.readRowGroups(['nope']))).rejects.toBeInstanceOf(
          SchemaMismatchError,
        );
      } finally {
        whole.free();
        gets.mockRestore();
        ranges.mockRestore();
      }
    }
  });

  it('passes store errors through unchanged and reports a missing file', async () => {
    const store = new MemoryStore();
    const bytes = writeDataFile(
      physical(
        [field(1, 'k', 'INT')],
        Array.from({ length: 40_000 }, (_, i) => ({ k: i })),
      ),
      { compression: 'uncompressed', rowGroupSize: 8_000 },
    );
    await store.put('f.parquet', bytes);
    await expect(readDataFileRanged(store, 'missing.parquet')).rejects.toBeInstanceOf(ObjectNotFoundError);
    const d = await openDataFileRanged(store, 'f.parquet', bytes.length);
    store.injectFault({ op: 'getRange', error: () => new StoreUnavailableError('throttled') });
    await expect(d.readRowGroups(['k'], [0])).rejects.toBeInstanceOf(StoreUnavailableError);
    expect((await d.readRowGroups(['k'], [0]))[0].numRows).toBe(8_000);
    // A small file is read in one ranged GET: its footer read holds every chunk.
    const small = writeDataFile(
      physical(
        [field(1, 'k', 'INT')],
        Array.from({ length: 500 }, (_, i) => ({ k: i })),
      ),
      { compression: 'zstd', rowGroupSize: 100 },
    );
    await store.put('small.parquet', small);
    const ranges = vi.spyOn(store, 'getRange');
    expect((await readDataFileRanged(store, 'small.parquet', small.length)).numRows).toBe(500);
    expect(ranges).toHaveBeenCalledTimes(1);
    ranges.mockRestore();
  });
});

describe('thrift compact codec', () => {
  it('re-encodes a Parquet footer to the same bytes', () => {
    const r = rng(testSeed('format.thrift-compact.roundtrip'));
    const bytes = writeDataFile(physical(FIELDS, randomRows(r, FIELDS, 300)), {
      compression: 'zstd',
      rowGroupSize: 70,
      metadata: { a: 'b' },
    });
    const len = new DataView(bytes.buffer, bytes.byteOffset + bytes.length - 8, 4).getUint32(0, true);
    const footer = bytes.subarray(bytes.length - 8 - len, bytes.length - 8);
    const { struct, length } = decodeStruct(footer);
    expect(length).toBe(len);
    expect(encodeStruct(struct)).toEqual(footer);
  });
});

describe('readRowGroupsRanged on files other writers wrote', () => {
  it('reads a DuckDB file (dictionary pages on every column, several row groups) as the whole-file read does', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'varve-rg-duck-'));
    try {
      const path = join(dir, 'duck.parquet');
      const instance = await DuckDBInstance.create(':memory:', { threads: '1' });
      const conn = await instance.connect();
      try {
        await conn.run(
          `COPY (SELECT i AS id, i % 7 AS small, CASE WHEN i % 5 = 0 THEN NULL ELSE 'v' || (i % 13) END AS s, (i * 1.25)::DECIMAL(18,2) AS d,
             TIMESTAMP '2020-01-01' + INTERVAL (i) SECOND AS ts, i::DOUBLE / 3 AS f FROM range(5000) t(i))
           TO '${path}' (FORMAT parquet, ROW_GROUP_SIZE 1024)`,
        );
      } finally {
        conn.closeSync();
        instance.closeSync();
      }
      const bytes = new Uint8Array(await readFile(path));
      const src = { size: bytes.length, name: path, read: async (s: number, e: number) => bytes.slice(s, e) };
      const footer = await readParquetFooter(src);
      expect(footer.rowGroups.length).toBeGreaterThan(1);
      expect(footer.columns).toEqual(['id', 'small', 's', 'd', 'ts', 'f']);
      const groups = await collect(readRowGroupsRanged(src, { footer }));
      const whole = arrow.tableFromIPC(readParquet(bytes).intoIPCStream());
      const rows = (ts: arrow.Table[]) =>
        ts.flatMap((t) =>
          t.toArray().map((row) => JSON.stringify(row.toJSON(), (_, v) => (typeof v === 'bigint' ? String(v) : v))),
        );
      expect(rows(groups)).toEqual(rows([whole]));
      const projected = await collect(readRowGroupsRanged(src, { footer, columns: ['s', 'ts'] }));
      expect(projected[0].schema.names).toEqual(['s', 'ts']);
      expect(rows(projected)).toEqual(rows([whole.select(['s', 'ts'])]));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
