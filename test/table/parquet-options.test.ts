/**
 * Paimon's `parquet.*` table options (lib/schema/option-catalog.ts): set at `varve create`, they
 * shape the pages of every file the table writes from then on — writes inline and on the encoder
 * pool, changelogs, compactions, rescales — and `alter --set` changes new files only. Each file's
 * footer is read back with hyparquet (an outside reader), which also decodes the rows.
 */
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { afterAll, describe, expect, it } from 'vitest';
import { configureEncoderPool, encoderPool } from '../../lib/format/encoder-pool.js';
import type { Table } from '../../lib/table/table.js';
import { runVarve } from '../helpers/cli-process.js';
import { readRows, testTable } from '../helpers/tables.js';

/** What a reader sees of one column chunk's pages, over every row group of a file. */
interface ChunkFacts {
  dictionary: boolean;
  dataPages: number;
  pageTypes: string[];
}

/** Per column of a data file (table columns and system columns): its dictionary, data page count and page types. */
function footerFacts(bytes: Uint8Array): { rows: number; columns: Record<string, ChunkFacts> } {
  const md = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
  const columns: Record<string, ChunkFacts> = {};
  for (const g of md.row_groups) {
    for (const c of g.columns) {
      const m = c.meta_data!;
      const f = (columns[m.path_in_schema.join('.')] ??= { dictionary: false, dataPages: 0, pageTypes: [] });
      f.dictionary ||= m.dictionary_page_offset !== undefined || m.encodings.includes('RLE_DICTIONARY');
      for (const s of m.encoding_stats ?? []) {
        if (s.page_type === 'DICTIONARY_PAGE') continue;
        f.dataPages += s.count;
        if (!f.pageTypes.includes(s.page_type)) f.pageTypes.push(s.page_type);
      }
    }
  }
  return { rows: Number(md.num_rows), columns };
}

/** Every data and changelog file under `dir`, path → bytes. */
function parquetFiles(dir: string): Map<string, Uint8Array> {
  const out = new Map<string, Uint8Array>();
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const path = join(dir, name);
    if (name.endsWith('.parquet') && statSync(path).isFile()) out.set(path, new Uint8Array(readFileSync(path)));
  }
  return out;
}

function newFiles(after: Map<string, Uint8Array>, before: Map<string, Uint8Array>): Uint8Array[] {
  return [...after].filter(([p]) => !before.has(p)).map(([, b]) => b);
}

const row = (i: number) => ({
  id: i,
  name: `customer ${i} of the shop`,
  tag: ['a', 'b', 'c'][i % 3],
  qty: (i * 7) % 1000,
});

describe('parquet.* table options', () => {
  it('create -o sets the pages of written files, alter --set changes new files only, compaction follows the options', async () => {
    // Prepare: a table with dictionaries off but for `tag`, 4 KB pages, v2 data pages and snappy
    // (which hyparquet decodes), and one with the defaults for contrast.
    const dir = mkdtempSync(join(tmpdir(), 'varve-parquet-options-'));
    const wh = join(dir, 'wh');
    const varve = (...args: string[]) => runVarve(wh, args);
    const schema = ['--schema', 'id BIGINT NOT NULL, name STRING, tag STRING, qty INT', '--primary-key', 'id'];
    const options = [
      'parquet.enable.dictionary=false',
      'parquet.enable.dictionary#tag=true',
      'parquet.page.size=4kb',
      'parquet.writer.version=v2',
      'file.compression=snappy',
    ];
    for (const [table, opts] of [
      ['db.tuned', options],
      ['db.plain', ['file.compression=snappy']],
    ] as const) {
      const c = await varve('create', table, ...schema, ...opts.flatMap((o) => ['-o', o]));
      expect(c.code, c.err).toBe(0);
    }
    const input = join(dir, 'rows.jsonl');
    const rows = Array.from({ length: 20_000 }, (_, i) => row(i));
    writeFileSync(input, `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
    // Act 1: the same rows into both tables.
    for (const table of ['db.tuned', 'db.plain']) {
      const w = await varve('write', table, input);
      expect(w.code, w.err).toBe(0);
    }
    // Assess 1: the tuned file has the asked pages; the default one has the default dictionaries and 1 MB pages.
    const tunedDir = join(wh, 'db.db', 'tuned');
    const first = parquetFiles(tunedDir);
    expect(first.size).toBe(1);
    const [firstBytes] = first.values();
    const tuned = footerFacts(firstBytes);
    const [plainBytes] = parquetFiles(join(wh, 'db.db', 'plain')).values();
    const plain = footerFacts(plainBytes);
    expect(tuned.rows).toBe(20_000);
    expect(tuned.columns.name.dictionary).toBe(false);
    expect(tuned.columns.tag.dictionary).toBe(true);
    // By default strings get a dictionary (`tag`) unless nearly unique (`name`: dictionary-choice.ts,
    // at level 0 as in compaction output).
    expect(plain.columns.tag.dictionary).toBe(true);
    expect(plain.columns.name.dictionary).toBe(false);
    // Pages of about 4 KB (v2 pages delta-pack the values: ~67 of `name`, ~5 of `qty`) where the
    // defaults write one page per 20,000 rows.
    expect(tuned.columns.name.dataPages).toBeGreaterThanOrEqual(20);
    expect(tuned.columns.qty.dataPages).toBeGreaterThanOrEqual(3);
    expect(plain.columns.name.dataPages).toBe(1);
    expect(plain.columns.qty.dataPages).toBe(1);
    for (const c of Object.values(tuned.columns)) expect(c.pageTypes).toEqual(['DATA_PAGE_V2']);
    for (const c of Object.values(plain.columns)) expect(c.pageTypes).toEqual(['DATA_PAGE']);
    // An outside reader decodes the v2 pages to the rows written.
    const decoded = await parquetReadObjects({
      file: firstBytes.buffer.slice(
        firstBytes.byteOffset,
        firstBytes.byteOffset + firstBytes.byteLength,
      ) as ArrayBuffer,
      columns: ['id', 'name', 'tag', 'qty'],
    });
    expect(decoded.map((r) => ({ ...r, id: Number(r.id) }))).toEqual(rows);

    // Act 2: alter: dictionary for `name` too, default page size and v1 pages; then write more rows.
    const a = await varve(
      'alter',
      'db.tuned',
      '--set',
      'parquet.enable.dictionary#name=true',
      '--reset',
      'parquet.page.size',
      '--set',
      'parquet.writer.version=v1',
    );
    expect(a.code, a.err).toBe(0);
    const more = Array.from({ length: 3_000 }, (_, i) => row(20_000 + i));
    writeFileSync(input, `${more.map((r) => JSON.stringify(r)).join('\n')}\n`);
    const w2 = await varve('write', 'db.tuned', input);
    expect(w2.code, w2.err).toBe(0);
    // Assess 2: the new file follows the new options; the first file is as it was.
    const second = parquetFiles(tunedDir);
    const [added] = newFiles(second, first);
    const after = footerFacts(added);
    expect(after.rows).toBe(3_000);
    expect(after.columns.name.dictionary).toBe(true);
    expect(after.columns.tag.dictionary).toBe(true);
    expect(after.columns.qty.dictionary).toBe(false);
    expect(after.columns.qty.dataPages).toBe(1);
    for (const c of Object.values(after.columns)) expect(c.pageTypes).toEqual(['DATA_PAGE']);
    expect(footerFacts(second.get([...first.keys()][0])!)).toEqual(tuned);

    // Act 3: a full compaction rewrites both files into one.
    const c = await varve('compact', 'db.tuned', '--full');
    expect(c.code, c.err).toBe(0);
    // Assess 3: the compacted file is written with the current options, and reads back whole.
    const compacted = newFiles(parquetFiles(tunedDir), second).map(footerFacts);
    expect(compacted.map((f) => f.rows)).toEqual([23_000]);
    expect(compacted[0].columns.name.dictionary).toBe(true);
    expect(compacted[0].columns.qty.dictionary).toBe(false);
    expect(compacted[0].columns.id.dictionary).toBe(false);
    const read = await varve('read', 'db.tuned', '--format', 'jsonl');
    expect(read.code, read.err).toBe(0);
    const back = read.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(back).toEqual([...rows, ...more]);
  });

  it('refuses a bad parquet.* option at create and at alter, naming what varve supports, and writes nothing', async () => {
    // Prepare
    const wh = join(mkdtempSync(join(tmpdir(), 'varve-parquet-options-')), 'wh');
    const varve = (...args: string[]) => runVarve(wh, args);
    // Act
    const badKey = await varve(
      'create',
      'db.t',
      '--schema',
      'id BIGINT NOT NULL',
      '--primary-key',
      'id',
      '-o',
      'parquet.block.size=128mb',
    );
    const ok = await varve('create', 'db.t', '--schema', 'id BIGINT NOT NULL, s STRING', '--primary-key', 'id');
    const badValue = await varve('alter', 'db.t', '--set', 'parquet.dictionary.page.size=small');
    const badColumn = await varve('alter', 'db.t', '--set', 'parquet.enable.dictionary#x=false');
    const unknown = await varve('alter', 'db.t', '--set', 'parquet.enable.dict=false');
    const describe = await varve('describe', 'db.t');
    // Assess
    expect(badKey.code).not.toBe(0);
    expect(badKey.err).toMatch(/parquet.block.size is not supported by varve: varve ends row groups by row count/);
    expect(ok.code, ok.err).toBe(0);
    expect(badValue.code).not.toBe(0);
    expect(badValue.err).toMatch(
      /parquet.dictionary.page.size = "small" is not valid; expected a size such as "512 kb"/,
    );
    expect(badColumn.code).not.toBe(0);
    expect(badColumn.err).toMatch(/names column x, which the table does not have; the columns are id, s/);
    expect(unknown.code).not.toBe(0);
    expect(unknown.err).toMatch(
      /parquet.enable.dict is not a Parquet writer option varve supports; the parquet.\* options varve supports are parquet.enable.dictionary, /,
    );
    expect(describe.out).not.toMatch(/parquet\./);
  });
});

describe('parquet.* options on every writer', () => {
  afterAll(async () => {
    await configureEncoderPool({ restart: true });
  });

  /** Every data and changelog file of the table's store with its footer facts. */
  async function storeFiles(t: Table): Promise<Array<{ key: string; facts: ReturnType<typeof footerFacts> }>> {
    const out = [];
    for await (const o of t.store.list(t.path)) {
      if (!o.key.endsWith('.parquet')) continue;
      out.push({ key: o.key, facts: footerFacts((await t.store.get(o.key)).body) });
    }
    return out;
  }

  it('the encoder pool, the input changelog and a rescale write files with the options', async () => {
    // Prepare: dictionaries off, small pages; every flush on two encoder threads.
    const t = await testTable({
      schema: 'id BIGINT NOT NULL, name STRING, tag STRING, qty INT',
      primaryKeys: ['id'],
      options: {
        bucket: '2',
        'changelog-producer': 'input',
        'parquet.enable.dictionary': 'false',
        'parquet.page.size': '4 kb',
      },
    });
    await configureEncoderPool({ threads: 2, minFlushBytes: 0 });
    const rows = Array.from({ length: 20_000 }, (_, i) => ({ ...row(i), id: BigInt(i) }));
    // Act: a pooled write, then a rescale to 3 buckets (its files by the table's file rewriter).
    await t.write(rows);
    const started = encoderPool().started;
    const written = await storeFiles(t);
    const rescale = await t.rescale({ buckets: 3 });
    const all = await storeFiles(t);
    // Assess: data and changelog files of the write, then the rescaled files, all without
    // dictionaries and with a page per ~1,024 INT values.
    expect(started).toBeGreaterThan(0);
    expect(written.filter((f) => f.key.includes('/changelog-')).length).toBe(2);
    expect(written.filter((f) => f.key.includes('/data-')).length).toBe(2);
    const rewritten = all.filter((f) => !written.some((w) => w.key === f.key));
    expect(rewritten.length).toBe(3);
    expect(rescale.filesAdded).toBe(3);
    for (const f of all) {
      expect(f.facts.columns.name.dictionary, f.key).toBe(false);
      expect(f.facts.columns.tag.dictionary, f.key).toBe(false);
      expect(f.facts.columns.qty.dataPages, f.key).toBeGreaterThanOrEqual(Math.floor(f.facts.rows / 2048));
    }
    expect((await readRows(t)).length).toBe(20_000);
  });
});
