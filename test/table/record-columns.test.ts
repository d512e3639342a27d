/**
 * Input parsed straight into Arrow columns (lib/table/record-columns.ts, parseColumnChunks): the
 * same rows, kinds, rejects and error messages as the row-object path it replaced (the oracle in
 * test/helpers/row-input-oracle.ts) on random JSONL and CSV of every type, with nulls, missing and
 * unknown columns, row kinds, bad values, malformed and blank lines, CRLF and quoted CSV; chunks
 * are Arrow tables of bounded size, yielded while the input is still being read.
 */
import * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { toArrowType } from '../../lib/format/arrow-schema.js';
import { tableToRows } from '../../lib/format/columns.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { KIND_COLUMN, type TableSchema } from '../../lib/schema/types.js';
import { parseColumnChunks, type ColumnChunk, type ParsedRecords, type RecordInput } from '../../lib/table/input.js';
import { oracleParse } from '../helpers/row-input-oracle.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';

const FIELDS = parseSchemaText(
  'k BIGINT NOT NULL, b BOOLEAN, t TINYINT, sm SMALLINT, i INT NOT NULL, f FLOAT, d DOUBLE, dec DECIMAL(10,2), s STRING, by BYTES, dt DATE, ts TIMESTAMP(3), tu TIMESTAMP(6) NOT NULL',
);
const schemaOf = (primaryKeys: string[]): TableSchema =>
  ({
    id: 0,
    version: 1,
    highestFieldId: 13,
    timeMillis: 0,
    fields: FIELDS,
    primaryKeys,
    partitionKeys: [],
    options: {},
  }) as TableSchema;

/** JSON values per column: mostly valid, some of the wrong kind or out of range. */
const JSON_VALUES: Record<string, unknown[]> = {
  // The first three of each are valid.
  k: [0, 7, '-12', 9007199254740991, '9223372036854775807', 1.5, 'x', 2 ** 60, true],
  b: [true, false, true, 'true', 1],
  t: [0, 127, -128, 128, '5', 2.5],
  sm: [32767, -32768, '-7', 40000],
  i: [0, 2147483647, ' 42 ', -2147483648, 2147483648, 'abc', 1e3],
  f: [1.5, -0, 'NaN', 3.4e39, '-Infinity', '1e3', 'one', 0.1],
  d: [0.1, -2.5e-300, 'Infinity', '1.25', [], {}],
  dec: ['12.34', 1.5, '-99999999.99', '123456789.1', '1.234', 'abc', 7],
  s: ['a,b', 'quote " inside', 'é😀 ü', '', 'line\nbreak', 12, false, '\r\n'],
  by: ['AAEC', '', 'aGVsbG8=', '!!notb64'],
  dt: ['2024-02-29', 19000, '0001-01-01', '2023-02-29', '10000-01-01', 1.5],
  ts: ['2024-01-02T03:04:05.123Z', 1700000000000, '1970-01-01T00:00:00Z', 'yesterday', '2024-01-02T03:04:05.123456Z'],
  tu: ['2024-01-02T03:04:05.123456Z', 1700000000000000, '1970-01-01T00:00:00Z', '2024-01-02 03:04:05', 'nope'],
};
/** CSV text per column (empty = NULL). */
const TEXT_VALUES: Record<string, string[]> = Object.fromEntries(
  Object.entries(JSON_VALUES).map(([k, vs]) => [
    k,
    [...vs.filter((v) => typeof v !== 'object').map((v) => String(v)), ''],
  ]),
);

function jsonlInput(r: Rng, n: number, crlf: boolean): string {
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const p = r.next();
    if (p < 0.03) lines.push('');
    else if (p < 0.05) lines.push('{"k": 1, oops');
    else if (p < 0.06) lines.push(r.pick(['[1,2]', 'null', '42', '"s"']));
    else {
      const rec: Record<string, unknown> = {};
      for (const f of FIELDS) {
        const q = r.next();
        if (q < 0.01) continue; // missing
        rec[f.name] =
          q < (f.type.nullable ? 0.08 : 0.012)
            ? null
            : q < 0.97
              ? JSON_VALUES[f.name][r.int(0, 2)]
              : r.pick(JSON_VALUES[f.name]);
      }
      if (r.chance(0.02)) rec.extra = 1;
      if (r.chance(0.15)) rec._kind = r.pick(['+I', '-D', '-U', '+U', '-D', 'X', 3]);
      lines.push(JSON.stringify(rec));
    }
  }
  return lines.join(crlf ? '\r\n' : '\n') + (r.chance(0.5) ? '\n' : '');
}

function csvField(r: Rng, text: string): string {
  return /[",\r\n]/.test(text) || r.chance(0.2) ? `"${text.replace(/"/g, '""')}"` : text;
}

function csvInput(r: Rng, n: number, crlf: boolean): string {
  const nl = crlf ? '\r\n' : '\n';
  let columns = FIELDS.map((f) => f.name).filter(() => r.chance(0.9));
  if (r.chance(0.3)) columns = [...columns, '_kind'];
  if (r.chance(0.05)) columns = [...columns, 'extra'];
  columns = columns.sort(() => r.next() - 0.5);
  const lines = [columns.join(',')];
  for (let i = 0; i < n; i++) {
    if (r.chance(0.03)) {
      lines.push('');
      continue;
    }
    lines.push(
      columns
        .map((c) =>
          csvField(
            r,
            c === '_kind'
              ? r.pick(['+I', '-D', '-U', 'bad'])
              : c === 'extra'
                ? 'e'
                : r.chance(0.97)
                  ? TEXT_VALUES[c][r.int(0, 2)]
                  : r.pick(TEXT_VALUES[c]),
          ),
        )
        .join(','),
    );
  }
  return lines.join(nl) + nl;
}

async function* cut(bytes: Uint8Array, r: Rng): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; ) {
    const n = r.int(1, 300);
    yield bytes.subarray(at, at + n);
    at += n;
  }
}

async function collect(
  input: RecordInput,
  format: 'jsonl' | 'csv',
  schema: TableSchema,
  opts: { skipInvalid?: boolean; deletes?: boolean; chunkRows?: number },
): Promise<ColumnChunk[]> {
  const out: ColumnChunk[] = [];
  for await (const c of parseColumnChunks(input, format, schema, opts)) out.push(c);
  return out;
}

function asRows(chunks: ColumnChunk[], schema: TableSchema): ParsedRecords {
  return {
    rows: chunks.flatMap((c) => tableToRows(c.table, schema.fields)),
    kinds: chunks.flatMap((c) =>
      Array.from(c.table.getChild(KIND_COLUMN)!.toArray() as Int8Array),
    ) as ParsedRecords['kinds'],
    rejected: chunks.flatMap((c) => c.rejected),
  };
}

describe('parseColumnChunks', () => {
  it('gives the rows, kinds, rejects and errors of the row-object path on random JSONL and CSV of every type (randomized)', async () => {
    const seed = testSeed('record columns');
    const r = rng(seed);
    const encoder = new TextEncoder();
    let validRows = 0;
    let rejectedRows = 0;
    for (let round = 0; round < 12; round++) {
      const format = round % 2 === 0 ? 'jsonl' : 'csv';
      const schema = schemaOf(round % 6 < 4 ? ['k', 'i'] : []);
      const deletes = round % 6 === 2 || round % 6 === 3;
      const text = format === 'jsonl' ? jsonlInput(r, 150, r.chance(0.4)) : csvInput(r, 150, r.chance(0.4));
      const chunkRows = r.int(1, 60);
      const where = `seed ${seed}, round ${round} (${format}, chunkRows ${chunkRows}, keys ${schema.primaryKeys.join('+') || 'none'}${deletes ? ', deletes' : ''})`;

      const expected = oracleParse(text, format, schema, { skipInvalid: true, deletes });
      const chunks = await collect(cut(encoder.encode(text), r), format, schema, {
        skipInvalid: true,
        deletes,
        chunkRows,
      });
      const got = asRows(chunks, schema);
      expect(got.rejected, where).toEqual(expected.rejected);
      expect(got.kinds, where).toEqual(expected.kinds);
      expect(got.rows, where).toEqual(expected.rows);

      // Columnar chunks of bounded size, typed as the table's columns plus _VALUE_KIND.
      for (const c of chunks) {
        expect(c.table.numRows + c.rejected.length, where).toBeLessThanOrEqual(chunkRows);
        expect(c.table.batches.length, where).toBeLessThanOrEqual(1);
        expect(c.table.schema.names, where).toEqual([...schema.fields.map((f) => f.name), KIND_COLUMN]);
        schema.fields.forEach((f, i) =>
          expect(String(c.table.schema.fields[i].type), where).toBe(String(toArrowType(f.type))),
        );
        expect(c.table.getChild(KIND_COLUMN)!.type, where).toBeInstanceOf(arrow.Int8);
      }
      expect(chunks.at(-1)?.bytesRead, where).toBe(encoder.encode(text).length);

      // Without skipInvalid: the oracle's first error, word for word (or no error at all).
      let oracleError: string | undefined;
      try {
        oracleParse(text, format, schema, { deletes });
      } catch (e) {
        oracleError = (e as Error).message;
      }
      let error: string | undefined;
      try {
        await collect(text, format, schema, { deletes, chunkRows });
      } catch (e) {
        error = (e as Error).message;
      }
      expect(error, where).toBe(oracleError);
      validRows += expected.rows.length;
      rejectedRows += expected.rejected.length;
    }
    // The inputs exercise both sides.
    expect(validRows, `seed ${seed}`).toBeGreaterThan(300);
    expect(rejectedRows, `seed ${seed}`).toBeGreaterThan(100);
  });

  it('yields each chunk while the input is still being read (bounded look-ahead)', async () => {
    const schema = schemaOf(['k', 'i']);
    const lines = Array.from({ length: 2000 }, (_, k) => JSON.stringify({ k, i: k, tu: 0, s: `v${k}` }) + '\n');
    let pulled = 0;
    async function* pieces(): AsyncGenerator<Uint8Array> {
      for (let at = 0; at < lines.length; at += 50) {
        const piece = new TextEncoder().encode(lines.slice(at, at + 50).join(''));
        pulled += piece.length;
        yield piece;
      }
    }
    const seenAt: number[] = [];
    let rows = 0;
    for await (const c of parseColumnChunks(pieces(), 'jsonl', schema, { chunkRows: 128 })) {
      // Every chunk is out before more than one piece beyond its last record was read.
      rows += c.table.numRows;
      seenAt.push(pulled);
      expect(pulled).toBeLessThanOrEqual(
        new TextEncoder().encode(lines.slice(0, Math.ceil(rows / 50) * 50).join('')).length,
      );
    }
    expect(rows).toBe(2000);
    expect(seenAt.length).toBe(Math.ceil(2000 / 128));
  });
});
