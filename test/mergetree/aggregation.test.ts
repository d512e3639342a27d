import { describe, expect, it } from 'vitest';
import { InvalidArgumentError, OptionError } from '../../lib/errors.js';
import type { MergeConfig } from '../../lib/mergetree/merge-config.js';
import { D, I, UA, UB, bufferOf, mergeRecords, recordsOf, schemaOf, writeAndFlush, type Rec } from './fixtures.js';

type Agg = Partial<MergeConfig>;
const agg = (aggregateFunctions: MergeConfig['aggregateFunctions'], more: Agg = {}): Agg => ({
  engine: 'aggregation',
  aggregateFunctions,
  ...more,
});

describe('aggregation', () => {
  it('sums per key: amounts 10, 20, 5 for keys 1, 2, 1 → 1→15, 2→20', () => {
    const schema = schemaOf(['id INT', 'amount INT'], ['id']);

    const out = writeAndFlush(schema, agg({ amount: 'sum' }), [
      { id: 1, amount: 10 },
      { id: 2, amount: 20 },
      { id: 1, amount: 5 },
    ]);

    expect(out.map((r) => r.row)).toEqual([
      { id: 1, amount: 15 },
      { id: 2, amount: 20 },
    ]);
  });

  it('sums DECIMAL exactly and BIGINT beyond 2^53, keeping the column type', () => {
    const schema = schemaOf(['id INT', 'price DECIMAL(38,2)', 'big BIGINT'], ['id']);
    const rows = [
      { id: 1, price: '0.10', big: 2n ** 62n },
      { id: 1, price: '0.20', big: 1n },
      { id: 1, price: '99999999999999999999999999999999.99', big: null },
    ];

    const out = writeAndFlush(schema, agg({ price: 'sum', big: 'sum' }), rows);

    expect(out[0].row).toEqual({ id: 1, price: '100000000000000000000000000000000.29', big: 2n ** 62n + 1n });
  });

  it('keeps negative DECIMAL results exact, rounds FLOAT to single precision, and orders TIMESTAMP and BIGINT', () => {
    const schema = schemaOf(['id INT', 'p DECIMAL(12,2)', 'f FLOAT', 'ts TIMESTAMP(6)', 'b BIGINT'], ['id']);
    const rows = [
      { id: 1, p: '0.10', f: 0.1, ts: 1_700_000_000_000_001n, b: -(2n ** 62n) },
      { id: 1, p: '0.20', f: 0.2, ts: 1_700_000_000_000_000n, b: 5n },
      { id: 1, p: '0.60', f: 0.4, ts: null, b: null },
    ];
    const cfg = agg({ p: 'sum', f: 'sum', ts: 'max', b: 'min' }, { ignoreRetract: ['ts', 'b'] });

    const out = writeAndFlush(schema, cfg, rows, [I, I, UB]);

    const f = Math.fround(Math.fround(Math.fround(0.1) + Math.fround(0.2)) - Math.fround(0.4));
    expect(out[0].row).toEqual({ id: 1, p: '-0.30', f, ts: 1_700_000_000_000_001n, b: -(2n ** 62n) });
  });

  it('fails on overflow instead of wrapping: INT, TINYINT and DECIMAL precision', () => {
    const ints = schemaOf(['id INT', 'n INT', 't TINYINT'], ['id']);
    const dec = schemaOf(['id INT', 'p DECIMAL(4,2)'], ['id']);

    expect(() =>
      writeAndFlush(ints, agg({ n: 'sum' }), [
        { id: 1, n: 2 ** 31 - 1, t: 0 },
        { id: 1, n: 1, t: 0 },
      ]),
    ).toThrow(/overflows INT/);
    expect(() =>
      writeAndFlush(ints, agg({ t: 'sum' }), [
        { id: 1, n: 0, t: 100 },
        { id: 1, n: 0, t: 100 },
      ]),
    ).toThrow(/overflows TINYINT/);
    expect(() =>
      writeAndFlush(dec, agg({ p: 'sum' }), [
        { id: 1, p: '99.99' },
        { id: 1, p: '0.01' },
      ]),
    ).toThrow(/overflows DECIMAL\(4,2\)/);
  });

  it('product multiplies in the column type (DECIMAL rounded half up) and divides on retraction', () => {
    const schema = schemaOf(['id INT', 'n INT', 'x DOUBLE', 'p DECIMAL(10,2)'], ['id']);
    const rows = [
      { id: 1, n: 3, x: 1.5, p: '1.05' },
      { id: 1, n: 4, x: 2, p: '1.05' },
      { id: 1, n: 2, x: 3, p: '2.00' },
    ];

    const out = writeAndFlush(schema, agg({ n: 'product', x: 'product', p: 'product' }), rows, [I, I, UB]);

    // 1.05 * 1.05 = 1.1025 → 1.10; then / 2.00 = 0.55.
    expect(out[0].row).toEqual({ id: 1, n: 6, x: 1, p: '0.55' });
  });

  it('min and max compare strings by code point, dates numerically, and skip NULLs', () => {
    const schema = schemaOf(['id INT', 's STRING', 'd DATE'], ['id']);
    const rows = [
      { id: 1, s: '\uFFFF', d: 10 },
      { id: 1, s: '\u{1F600}', d: null },
      { id: 1, s: null, d: -3 },
    ];

    const mins = writeAndFlush(schema, agg({ s: 'min', d: 'min' }), rows);
    const maxs = writeAndFlush(schema, agg({ s: 'max', d: 'max' }), rows);

    expect(mins[0].row).toEqual({ id: 1, s: '\uFFFF', d: -3 });
    expect(maxs[0].row).toEqual({ id: 1, s: '\u{1F600}', d: 10 });
  });

  it('last_value takes NULL too; last_non_null_value (the default) keeps the last non-null', () => {
    const schema = schemaOf(['id INT', 'a STRING', 'b STRING'], ['id']);

    const out = writeAndFlush(schema, agg({ a: 'last_value' }), [
      { id: 1, a: 'x', b: 'x' },
      { id: 1, a: null, b: null },
    ]);

    expect(out[0].row).toEqual({ id: 1, a: null, b: 'x' });
  });

  it('first_value takes the first (even NULL); first_non_null_value the first non-null', () => {
    const schema = schemaOf(['id INT', 'a STRING', 'b STRING'], ['id']);

    const out = writeAndFlush(schema, agg({ a: 'first_value', b: 'first_non_null_value' }), [
      { id: 1, a: null, b: null },
      { id: 1, a: 'x', b: 'x' },
      { id: 1, a: 'y', b: 'y' },
    ]);

    expect(out[0].row).toEqual({ id: 1, a: null, b: 'x' });
  });

  it('listagg joins non-blank strings with the column delimiter', () => {
    const schema = schemaOf(['id INT', 'tags STRING', 'other STRING'], ['id']);
    const rows = [
      { id: 1, tags: 'a', other: 'a' },
      { id: 1, tags: '  ', other: null },
      { id: 1, tags: '\u{1F600}', other: 'b' },
    ];

    const out = writeAndFlush(
      schema,
      agg({ tags: 'listagg', other: 'listagg' }, { listaggDelimiters: { tags: ' | ' } }),
      rows,
    );

    expect(out[0].row).toEqual({ id: 1, tags: 'a | \u{1F600}', other: 'a,b' });
  });

  it('bool_and and bool_or', () => {
    const schema = schemaOf(['id INT', 'all BOOLEAN', 'any BOOLEAN'], ['id']);
    const rows = [
      { id: 1, all: true, any: false },
      { id: 1, all: false, any: null },
      { id: 1, all: null, any: true },
      { id: 2, all: true, any: false },
    ];

    const out = writeAndFlush(schema, agg({ all: 'bool_and', any: 'bool_or' }), rows);

    expect(out.map((r) => r.row)).toEqual([
      { id: 1, all: false, any: true },
      { id: 2, all: true, any: false },
    ]);
  });

  it('count counts non-null raw records when writing and sums stored counts when merging files', () => {
    const schema = schemaOf(['id INT', 'n BIGINT'], ['id']);
    const cfg = agg({ n: 'count' });
    const first = writeAndFlush(schema, cfg, [
      { id: 1, n: 7n },
      { id: 1, n: null },
      { id: 1, n: 9n },
      { id: 2, n: 5n },
    ]);
    const second = writeAndFlush(
      schema,
      cfg,
      [
        { id: 1, n: 1n },
        { id: 2, n: 3n },
        { id: 2, n: 3n },
        { id: 3, n: 1n },
      ],
      [I, UB, I, D],
    ).map((r) => ({
      ...r,
      seq: r.seq + 10,
    }));

    const merged = mergeRecords(schema, cfg, [first, second], { dropDeletes: false });

    expect(first.map((r) => r.row.n)).toEqual([2n, 1n]);
    // key 2: 1 (first file) + (retract 1, add 1) = 1; key 3: a lone -D keeps its count as a retraction.
    expect(merged.map((r) => [r.row.id, r.row.n, r.kind])).toEqual([
      [1, 3n, I],
      [2, 1n, I],
      [3, 1n, D],
    ]);
  });

  it('retractions subtract from sum and clear last_non_null_value', () => {
    const schema = schemaOf(['id INT', 'amount INT', 'label STRING'], ['id']);
    const cfg = agg({ amount: 'sum' });
    const base = [{ row: { id: 1, amount: 30, label: 'x' }, kind: I, seq: 1 }];
    const update = [{ row: { id: 1, amount: 30, label: 'x' }, kind: UB, seq: 2 }];
    const after = [{ row: { id: 1, amount: 12, label: null }, kind: UA, seq: 3 }];

    const out = mergeRecords(schema, cfg, [base, update, after]);

    expect(out.map((r) => r.row)).toEqual([{ id: 1, amount: 12, label: null }]);
  });

  it('a lone retraction in a flush stays a retraction and applies when merged with the older record', () => {
    const schema = schemaOf(['id INT', 'amount INT'], ['id']);
    const cfg = agg({ amount: 'sum' });
    const older: Rec[] = [{ row: { id: 1, amount: 15 }, kind: I, seq: 1 }];
    const flushed = writeAndFlush(schema, cfg, [{ id: 1, amount: 5 }], [D]).map((r) => ({ ...r, seq: 2 }));

    expect(flushed[0].kind).toBe(D);
    expect(mergeRecords(schema, cfg, [older, flushed]).map((r) => r.row.amount)).toEqual([10]);
  });

  it('functions that cannot undo fail on retraction unless ignore-retract is set', () => {
    const schema = schemaOf(['id INT', 'm INT'], ['id']);
    const rows = [
      { id: 1, m: 4 },
      { id: 1, m: 4 },
    ];

    const failing = () => writeAndFlush(schema, agg({ m: 'max' }), rows, [I, UB]);
    const ignoring = writeAndFlush(schema, agg({ m: 'max' }, { ignoreRetract: ['m'] }), rows, [I, UB]);

    expect(failing).toThrow(InvalidArgumentError);
    expect(failing).toThrow(/fields\.m\.ignore-retract/);
    expect(ignoring[0].row).toEqual({ id: 1, m: 4 });
  });

  it('aggregation.remove-record-on-delete: -D deletes the row, a later insert starts over', () => {
    const schema = schemaOf(['id INT', 'amount INT'], ['id']);
    const cfg = agg({ amount: 'sum' }, { aggregationRemoveRecordOnDelete: true });
    const rows = [
      { id: 1, amount: 10 },
      { id: 1, amount: 99 },
      { id: 2, amount: 1 },
      { id: 2, amount: 1 },
      { id: 2, amount: 7 },
    ];

    const out = writeAndFlush(schema, cfg, rows, [I, D, I, D, I]);

    expect(out.map((r) => [r.row, r.kind])).toEqual([
      [{ id: 1, amount: null }, D],
      [{ id: 2, amount: 7 }, I],
    ]);
  });

  it('keeps the newest value of primary-key and sequence.field columns', () => {
    const schema = schemaOf(['id INT', 'ts INT', 'amount INT'], ['id']);

    const out = writeAndFlush(schema, agg({ amount: 'sum', ts: 'sum' }, { sequenceFields: ['ts'] }), [
      { id: 1, ts: 5, amount: 1 },
      { id: 1, ts: 2, amount: 1 },
    ]);

    expect(out[0].row).toEqual({ id: 1, ts: 5, amount: 2 });
  });

  it('rejects unknown functions, functions that do not fit the type and options on unknown columns', () => {
    const schema = schemaOf(['id INT', 's STRING'], ['id']);

    expect(() => bufferOf(schema, agg({ s: 'median' as 'sum' }))).toThrow(/unknown aggregate function 'median'/);
    expect(() => bufferOf(schema, agg({ s: 'bool_or' }))).toThrow(OptionError);
    expect(() => bufferOf(schema, agg({ nope: 'sum' }))).toThrow(/fields\.nope\.aggregate-function names column nope/);
  });

  it('passes a single +U through with its kind (level-0 files keep kinds)', () => {
    const schema = schemaOf(['id INT', 'amount INT'], ['id']);
    const b = bufferOf(schema, agg({ amount: 'sum' }));
    b.add([{ id: 1, amount: 3 }], [UA]);

    expect(recordsOf(schema, b.flush().data)[0].kind).toBe(UA);
  });
});
