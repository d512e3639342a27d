/**
 * `parquet.writer.version=v2` under the Iceberg view: data files written with DATA_PAGE_V2 pages and
 * parquet-rs's v2 encodings (DELTA_BINARY_PACKED, DELTA_BYTE_ARRAY / DELTA_LENGTH_BYTE_ARRAY where
 * dictionaries are off) are read by pyiceberg (through pyarrow) to the rows `varve read` returns:
 * a keyed table with deletion vectors (every commit exported: upserts, deletes, a full compaction,
 * whose output follows the option too) and an append table, random rows of every column type.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { afterAll, describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { tableToRows } from '../../lib/format/columns.js';
import { icebergLocation, readCurrentIcebergMetadata } from '../../lib/iceberg/iceberg-metadata.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { RowKind, type Row } from '../../lib/schema/types.js';
import { LocalStore } from '../../lib/store/local-store.js';
import type { Table } from '../../lib/table/table.js';
import { randomValue } from '../format/fixtures.js';
import { pyicebergSession } from '../helpers/pyiceberg-session.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { canonicalValue, sortedRowTexts, type IcebergMetadataJson, type PyicebergReader } from './outside-readers.js';

const dirs: string[] = [];
const pyiceberg = pyicebergSession('the parquet.writer.version=v2 Iceberg test');
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const COLUMNS =
  'id INT NOT NULL, region STRING NOT NULL, v BIGINT, amount DECIMAL(12,2), name STRING, day DATE, ts TIMESTAMP(6), score DOUBLE, w INT, flag BOOLEAN, raw BYTES';

/** Options of both tables: v2 pages, dictionaries off but for `region`, small pages (many per file). */
const V2_OPTIONS = {
  'parquet.writer.version': 'v2',
  'parquet.enable.dictionary': 'false',
  'parquet.enable.dictionary#region': 'true',
  'parquet.page.size': '4kb',
  'metadata.iceberg.storage': 'table-location',
  bucket: '2',
};

async function newTable(keyed: boolean): Promise<Table> {
  const dir = mkdtempSync(join(tmpdir(), 'varve-v2-iceberg-'));
  dirs.push(dir);
  return new FolderCatalog(new LocalStore(dir)).createTable(keyed ? 'db.keyed' : 'db.events', {
    fields: parseSchemaText(COLUMNS),
    primaryKeys: keyed ? ['region', 'id'] : [],
    options: keyed ? { ...V2_OPTIONS, 'deletion-vectors.enabled': 'true' } : { ...V2_OPTIONS, 'bucket-key': 'id' },
  });
}

/** A random row of `table` with key `id`. */
function randomRow(r: Rng, table: Table, id: number): Row {
  const row: Row = {};
  for (const f of table.schema.fields) row[f.name] = randomValue(r, f);
  row.id = id;
  row.region = r.pick(['eu', 'us', 'ünï']);
  return row;
}

/** The data files under the table's folder, each file's set of page types and encodings. */
function fileEncodings(table: Table): { pageTypes: Set<string>; encodings: Set<string> }[] {
  const dir = join((table.store as LocalStore).root, table.path);
  const out: { pageTypes: Set<string>; encodings: Set<string> }[] = [];
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const path = join(dir, name);
    if (!/bucket-\d+\/data-.*\.parquet$/.test(name) || !statSync(path).isFile()) continue;
    const bytes = readFileSync(path);
    const md = parquetMetadata(
      bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    );
    const facts = { pageTypes: new Set<string>(), encodings: new Set<string>() };
    for (const g of md.row_groups) {
      for (const c of g.columns) {
        for (const e of c.meta_data!.encodings) facts.encodings.add(e);
        for (const s of c.meta_data!.encoding_stats ?? []) facts.pageTypes.add(s.page_type);
      }
    }
    out.push(facts);
  }
  return out;
}

/** pyiceberg's scan of the current Iceberg snapshot equals `varve read`; the files are v2. */
async function checkAfter(py: PyicebergReader, table: Table, what: string): Promise<number> {
  const t = await table.latest();
  const current = (await readCurrentIcebergMetadata(t.store, icebergLocation(t)!))!;
  const metadata = current.metadata as unknown as IcebergMetadataJson;
  const latest = (await t.snapshots.latestId())!;
  expect(metadata['current-snapshot-id'], `${what}: the export follows every commit`).toBe(latest);
  const rows = await py.read(join((t.store as LocalStore).root, current.key), [latest]);
  const fields = t.schema.fields;
  const varve = tableToRows(await t.read(), fields).map((row) => fields.map((f) => canonicalValue(f, row[f.name])));
  const expected = { columns: fields.map((f) => f.name), rows: varve };
  expect(sortedRowTexts(rows.get(latest)!), `${what}: pyiceberg's scan of v2 pages = varve read`).toEqual(
    sortedRowTexts(expected),
  );
  for (const f of fileEncodings(t)) {
    expect([...f.pageTypes], `${what}: data pages are v2`).toEqual(expect.arrayContaining(['DATA_PAGE_V2']));
    expect(f.pageTypes.has('DATA_PAGE'), `${what}: no v1 data page`).toBe(false);
  }
  return varve.length;
}

describe('parquet.writer.version=v2 read through the Iceberg view by pyiceberg', () => {
  it('a keyed table with deletion vectors: upserts, deletes and a full compaction equal varve read', {
    timeout: 300_000,
  }, async (ctx) => {
    const py = pyiceberg();
    if (py === undefined) return ctx.skip();
    const seed = testSeed('iceberg.writer-version-v2.keyed');
    const r = rng(seed);
    const table = await newTable(true);
    await table.write(Array.from({ length: r.int(1000, 2000) }, (_, i) => randomRow(r, table, i)));
    await checkAfter(py, table, 'first write');
    const upserts = Array.from({ length: r.int(100, 400) }, () => randomRow(r, table, r.int(0, 2500)));
    await table.write(upserts, { kinds: upserts.map(() => r.pick([RowKind.INSERT, RowKind.UPDATE_AFTER])) });
    await checkAfter(py, table, 'upserts');
    const deletes = Array.from({ length: r.int(20, 100) }, () => randomRow(r, table, r.int(0, 2500)));
    await table.write(deletes, { kinds: deletes.map(() => RowKind.DELETE) });
    await checkAfter(py, table, 'deletes');
    const c = await compactTable(table, { full: true });
    expect(c.bucketsCompacted, 'the full compaction rewrote buckets').toBeGreaterThan(0);
    const n = await checkAfter(py, table, 'full compaction');
    // The encodings that make a file v2 beyond its page headers, in the files pyiceberg just read.
    const encodings = new Set(fileEncodings(await table.latest()).flatMap((f) => [...f.encodings]));
    expect([...encodings]).toEqual(expect.arrayContaining(['DELTA_BINARY_PACKED', 'RLE_DICTIONARY']));
    expect(encodings.has('DELTA_BYTE_ARRAY') || encodings.has('DELTA_LENGTH_BYTE_ARRAY'), [...encodings].join()).toBe(
      true,
    );
    console.log(`seed ${seed}: ${n} rows read by pyiceberg from v2 pages (${[...encodings].sort().join(', ')})`);
  });

  it('an append table: every write equals varve read', { timeout: 300_000 }, async (ctx) => {
    const py = pyiceberg();
    if (py === undefined) return ctx.skip();
    const seed = testSeed('iceberg.writer-version-v2.append');
    const r = rng(seed);
    const table = await newTable(false);
    for (let w = 0; w < 3; w++) {
      await table.write(Array.from({ length: r.int(1, 3000) }, () => randomRow(r, table, r.int(0, 100_000))));
      await checkAfter(py, table, `write ${w + 1}`);
    }
  });
});
