import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../lib/errors.js';
import { D, I, UB, mergeRecords, schemaOf, writeAndFlush } from './fixtures.js';

const schema = schemaOf(['id INT', 'name STRING'], ['id']);
const FIRST_ROW = { engine: 'first-row' } as const;

describe('first-row', () => {
  it('keeps the first version of each key: (1,A),(2,B),(1,C) → 1→A, 2→B', () => {
    const out = writeAndFlush(schema, FIRST_ROW, [
      { id: 1, name: 'A' },
      { id: 2, name: 'B' },
      { id: 1, name: 'C' },
    ]);

    expect(out).toEqual([
      { row: { id: 1, name: 'A' }, kind: I, seq: 0 },
      { row: { id: 2, name: 'B' }, kind: I, seq: 1 },
    ]);
  });

  it('keeps the oldest version across runs, whatever the run order', () => {
    const older = [{ row: { id: 1, name: 'first' }, kind: I, seq: 3 }];
    const newer = [{ row: { id: 1, name: 'second' }, kind: I, seq: 9 }];

    expect(mergeRecords(schema, FIRST_ROW, [newer, older]).map((r) => r.row.name)).toEqual(['first']);
  });

  it('rejects -U/-D input by default, naming the option that allows it', () => {
    const write = () =>
      writeAndFlush(
        schema,
        FIRST_ROW,
        [
          { id: 1, name: 'A' },
          { id: 1, name: 'A' },
        ],
        [I, D],
      );

    expect(write).toThrow(InvalidArgumentError);
    expect(write).toThrow(/ignore-delete/);
  });

  it('skips retractions under ignore-delete, also those already in files', () => {
    const runs = [[{ row: { id: 1, name: 'A' }, kind: UB, seq: 1 }], [{ row: { id: 1, name: 'B' }, kind: I, seq: 2 }]];

    expect(mergeRecords(schema, { ...FIRST_ROW, ignoreDelete: true }, runs).map((r) => r.row.name)).toEqual(['B']);
  });

  it('takes "first" by sequence.field when one is set', () => {
    const s = schemaOf(['id INT', 'ts INT', 'name STRING'], ['id']);

    const out = writeAndFlush(s, { ...FIRST_ROW, sequenceFields: ['ts'] }, [
      { id: 1, ts: 9, name: 'late' },
      { id: 1, ts: 2, name: 'early' },
    ]);

    expect(out.map((r) => r.row.name)).toEqual(['early']);
  });
});
