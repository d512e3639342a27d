import * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { ObjectNotFoundError, SnapshotExpiredError } from '../../lib/errors.js';
import { tableToRows } from '../../lib/format/columns.js';
import { readDataFileMetadata } from '../../lib/format/data-file.js';
import { dataFileKey } from '../../lib/table/paths.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { RowKind } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { testTable } from '../helpers/tables.js';

function newTable(options: Record<string, string> = {}) {
  return testTable({
    schema: 'id BIGINT, v STRING',
    primaryKeys: ['id'],
    options: { bucket: '2', 'write-only': 'true', ...options },
  });
}

describe('TableWriter', () => {
  it('numbers each batch from zero, so the table-wide sequence grows by the rows committed', async () => {
    // Prepare
    const table = await newTable();
    const writer = table.newWriter();
    // Act
    for (let c = 0; c < 3; c++) {
      await writer.write([
        { id: 1n, v: `a${c}` },
        { id: 2n, v: `b${c}` },
      ]);
      await writer.commit(`c${c}`);
    }
    // Assess
    const latest = (await table.snapshots.latest())!;
    expect(latest.nextSequenceNumber).toBe(6);
    expect(tableToRows(await table.read(), table.schema.fields)).toEqual([
      { id: 1n, v: 'a2' },
      { id: 2n, v: 'b2' },
    ]);
  });

  it('flushes a full buffer early into extra level-0 files when spilling is off, and the later flush is newer', async () => {
    const table = await newTable({ 'write-buffer-spillable': 'false', 'write-buffer-size': '1 kb', bucket: '1' });
    const writer = table.newWriter();
    for (let i = 0; i < 20; i++)
      await writer.write(Array.from({ length: 10 }, (_, k) => ({ id: BigInt(k), v: `round ${i} `.repeat(5) })));
    const result = await writer.commit('one');
    const files = await readLiveFiles(table.store, table.path, result.snapshot!);
    expect(files.length).toBeGreaterThan(1);
    const rows = tableToRows(await table.read(), table.schema.fields);
    expect(rows).toHaveLength(10);
    expect(rows.every((r) => r.v === 'round 19 '.repeat(5))).toBe(true);
  });

  it('writes Arrow tables in bulk, routing rows to buckets, with row kinds', async () => {
    const table = await newTable();
    const writer = table.newWriter();
    const input = new arrow.Table({
      id: arrow.vectorFromArray(BigInt64Array.from({ length: 20 }, (_, i) => BigInt(i + 1))),
      v: arrow.vectorFromArray(
        Array.from({ length: 20 }, (_, i) => `v${i + 1}`),
        new arrow.Utf8(),
      ),
    });
    await writer.writeArrow(input);
    await writer.commit('bulk');
    const deletes = new arrow.Table({
      id: arrow.vectorFromArray(BigInt64Array.from([2n])),
      v: arrow.vectorFromArray(['b'], new arrow.Utf8()),
      _VALUE_KIND: arrow.vectorFromArray(Int8Array.from([RowKind.DELETE])),
    });
    await writer.writeArrow(deletes);
    await writer.commit('bulk-delete');
    // A read returns each bucket's rows in key order, bucket after bucket.
    const ids = tableToRows(await table.read(), table.schema.fields)
      .map((r) => r.id as bigint)
      .sort((a, b) => (a < b ? -1 : 1));
    expect(ids).toEqual(Array.from({ length: 20 }, (_, i) => BigInt(i + 1)).filter((id) => id !== 2n));
    const buckets = new Set(
      (await readLiveFiles(table.store, table.path, (await table.snapshots.latest())!)).map((e) => e.bucket),
    );
    expect(buckets.size).toBe(2);
  });
});

describe('TableWriter.writeArrow of small tables', () => {
  it('rejects a bad table in its own call and keeps the good ones held before it', async () => {
    const table = await newTable();
    const writer = table.newWriter();
    const good = new arrow.Table({
      id: arrow.vectorFromArray(BigInt64Array.from([1n, 2n, 3n])),
      v: arrow.vectorFromArray(['a', 'b', 'c'], new arrow.Utf8()),
    });
    await writer.writeArrow(good);
    // A column of another type, and a row kind out of range: each call fails, nothing of it is buffered.
    const wrongType = new arrow.Table({
      id: arrow.vectorFromArray(BigInt64Array.from([4n])),
      v: arrow.vectorFromArray(Int32Array.from([4])),
    });
    await expect(writer.writeArrow(wrongType)).rejects.toThrow(/column v is Int32 in the input but Utf8 in the table/);
    const badKind = new arrow.Table({
      id: arrow.vectorFromArray(BigInt64Array.from([5n, 6n])),
      v: arrow.vectorFromArray(['e', 'f'], new arrow.Utf8()),
      _VALUE_KIND: arrow.vectorFromArray(Int8Array.from([0, 7])),
    });
    await expect(writer.writeArrow(badKind)).rejects.toThrow(/row 1 has _VALUE_KIND 7/);
    const result = await writer.commit('c');
    expect(result.rows).toBe(3);
    expect(
      tableToRows(await table.read(), table.schema.fields)
        .map((r) => r.id)
        .sort(),
    ).toEqual([1n, 2n, 3n]);
  });
});

describe('level-0 files', () => {
  it('cut their row groups at 65,536 rows, so the encoder holds one piece of a flush, not a 262,144-row group', async () => {
    const table = await newTable({ bucket: '1' });
    const writer = table.newWriter();
    const n = 70_000;
    await writer.writeArrow(
      new arrow.Table({
        id: arrow.vectorFromArray(BigInt64Array.from({ length: n }, (_, i) => BigInt(i))),
        v: arrow.vectorFromArray(
          Array.from({ length: n }, (_, i) => `v${i}`),
          new arrow.Utf8(),
        ),
      }),
    );
    const result = await writer.commit('rg');
    const [entry] = await readLiveFiles(table.store, table.path, result.snapshot!);
    const meta = await readDataFileMetadata(
      table.store,
      dataFileKey(table.path, entry.partition, entry.bucket, entry.file.fileName),
    );
    expect(meta.numRows).toBe(n);
    expect(meta.numRowGroups).toBe(2);
  });
});

describe('reads racing expiry', () => {
  it('a data file gone together with its snapshot is SnapshotExpiredError, not a bare not-found', async () => {
    // Prepare: a table whose data-file reads find the snapshot expired under them.
    const store = new MemoryStore();
    const table = await new FolderCatalog(store).createTable('db.t', {
      fields: parseSchemaText('id BIGINT, v STRING'),
      primaryKeys: ['id'],
    });
    await table.write([{ id: 1n, v: 'a' }]);
    const snapshot = (await table.snapshots.latest())!;
    // Data files are read whole (get) or by range (getRange): both find the file gone.
    const expireUnder = async (key: string) => {
      await store.delete(`${table.path}/snapshot/snapshot-${snapshot.id}`);
      throw new ObjectNotFoundError(key);
    };
    const realGet = store.get.bind(store);
    store.get = async (key: string) => (key.endsWith('.parquet') ? expireUnder(key) : realGet(key));
    const realGetRange = store.getRange.bind(store);
    store.getRange = async (key: string, start: number, end: number) =>
      key.endsWith('.parquet') ? expireUnder(key) : realGetRange(key, start, end);
    // Act + Assess
    await expect(table.read({ snapshotId: snapshot.id })).rejects.toBeInstanceOf(SnapshotExpiredError);
  });
});
