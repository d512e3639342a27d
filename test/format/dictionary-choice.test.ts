/**
 * uniqueStringColumns (which string columns a file writes without a dictionary) against a model
 * over random columns, and what writeDataFile makes of its answer: no dictionary for those columns
 * unless a `parquet.enable.dictionary` option asks for one, the same rows either way.
 */
import type * as arrow from 'apache-arrow';
import { parquetMetadata } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { rowsToTable, tableToRows } from '../../lib/format/columns.js';
import { readDataFile, writeDataFile } from '../../lib/format/data-file.js';
import { DICTIONARY_SAMPLE_ROWS, uniqueStringColumns } from '../../lib/format/dictionary-choice.js';
import type { ParquetWriterOptions } from '../../lib/schema/options.js';
import type { DataField, Row } from '../../lib/schema/types.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { field } from './fixtures.js';

const FIELDS: DataField[] = [
  field(0, 'id', 'BIGINT', { nullable: false }),
  field(1, 'a', 'STRING'),
  field(2, 'b', 'STRING'),
  field(3, 'n', 'INT'),
];

function dataFile(rows: Row[]): arrow.Table {
  return rowsToTable(FIELDS, rows, {
    sequence: rows.map((_, i) => i),
    kind: rows.map(() => 0),
  });
}

/** The model: the first DICTIONARY_SAMPLE_ROWS values of the column, at least 4,096 non-null, 90 % distinct. */
function modelUnique(values: Array<string | null>): boolean {
  const sample = values.slice(0, DICTIONARY_SAMPLE_ROWS).filter((v) => v !== null);
  return sample.length >= 4_096 && new Set(sample).size >= 0.9 * sample.length;
}

/** A column of `n` values drawn from `distinct` strings (some sharing prefixes and lengths), `nulls` of them null. */
function randomColumn(r: Rng, n: number, distinct: number, nulls: number): Array<string | null> {
  const pool = Array.from({ length: distinct }, (_, i) =>
    r.chance(0.5) ? `v${i}` : `value-${i}-${'x'.repeat(r.int(0, 3))}`,
  );
  return Array.from({ length: n }, () => (r.chance(nulls) ? null : pool[r.int(0, distinct - 1)]));
}

/** Per column of a Parquet file: whether any chunk has a dictionary. */
function dictionaries(bytes: Uint8Array): Record<string, boolean> {
  const meta = parquetMetadata(
    bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
  );
  const out: Record<string, boolean> = {};
  for (const g of meta.row_groups) {
    for (const c of g.columns) {
      const m = c.meta_data!;
      const name = m.path_in_schema.join('.');
      out[name] =
        (out[name] ?? false) || m.dictionary_page_offset !== undefined || m.encodings.includes('RLE_DICTIONARY');
    }
  }
  return out;
}

const PARQUET: ParquetWriterOptions = {
  columnDictionary: {},
  dictionaryPageSize: 1024 * 1024,
  dataPageSize: 1024 * 1024,
  writerVersion: 1,
};

describe('uniqueStringColumns', () => {
  it('names exactly the string columns whose sampled values are 90 % distinct (random columns, slices)', () => {
    const seed = testSeed('dictionary choice');
    const r = rng(seed);
    for (let round = 0; round < 12; round++) {
      const n = r.pick([100, 5_000, 20_000, DICTIONARY_SAMPLE_ROWS + 3_000]);
      // Around the 90 % line and far from it.
      const distinctA = Math.max(1, Math.round(n * r.pick([0.05, 0.5, 2, 4, 20])));
      const a = randomColumn(r, n, distinctA, r.pick([0, 0.1, 0.6]));
      const b = Array.from({ length: n }, (_, i) => (r.chance(0.3) ? null : `unique-${i}`));
      const rows = a.map((s, i) => ({ id: BigInt(i), a: s, b: b[i], n: i }));
      const table = dataFile(rows);
      const from = r.int(0, Math.min(500, n - 1));
      const part = table.slice(from);
      const expected = ['a', 'b'].filter((c) => modelUnique((c === 'a' ? a : b).slice(from)));
      expect(uniqueStringColumns(part), `round ${round}, n ${n}, from ${from} (seed ${seed})`).toEqual(expected);
    }
  });

  it('needs 4,096 non-null values to decide, and never names system or non-string columns', () => {
    const few = Array.from({ length: 4_095 }, (_, i) => ({ id: BigInt(i), a: `a${i}`, b: null, n: i }));
    expect(uniqueStringColumns(dataFile(few))).toEqual([]);
    const enough = [...few, { id: 4_095n, a: 'a4095', b: null, n: 0 }];
    expect(uniqueStringColumns(dataFile(enough))).toEqual(['a']);
  });
});

describe('writeDataFile with uniqueColumns', () => {
  it('writes those columns plain unless a parquet.enable.dictionary option asks for a dictionary; the rows are the same', async () => {
    const rows = Array.from({ length: 10_000 }, (_, i) => ({
      id: BigInt(i),
      a: `name-${i}`,
      b: `tag-${i % 7}`,
      n: i,
    }));
    const table = dataFile(rows);
    const uniqueColumns = uniqueStringColumns(table);
    expect(uniqueColumns).toEqual(['a']);

    const chosen = writeDataFile(table, { compression: 'zstd', uniqueColumns });
    const byDefault = writeDataFile(table, { compression: 'zstd' });
    const columnOption = writeDataFile(table, {
      compression: 'zstd',
      uniqueColumns,
      parquet: { ...PARQUET, columnDictionary: { a: true } },
    });
    const tableOption = writeDataFile(table, {
      compression: 'zstd',
      uniqueColumns,
      parquet: { ...PARQUET, dictionary: true },
    });

    expect(dictionaries(chosen)).toMatchObject({ a: false, b: true });
    expect(dictionaries(byDefault)).toMatchObject({ a: true, b: true });
    expect(dictionaries(columnOption)).toMatchObject({ a: true, b: true });
    expect(dictionaries(tableOption)).toMatchObject({ a: true, b: true, n: true });
    for (const bytes of [chosen, columnOption, tableOption])
      expect(tableToRows(await readDataFile(bytes), FIELDS)).toEqual(tableToRows(table, FIELDS));
  });
});
