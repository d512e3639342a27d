import { describe, expect, it } from 'vitest';
import { D, I, UA, UB, mergeRecords, schemaOf, writeAndFlush } from './fixtures.js';

const schema = schemaOf(['id INT', 'name STRING'], ['id']);

describe('deduplicate', () => {
  it('keeps the latest version of each key: (1,A),(2,B),(1,C) → 1→C, 2→B', () => {
    // Prepare
    const rows = [
      { id: 1, name: 'A' },
      { id: 2, name: 'B' },
      { id: 1, name: 'C' },
    ];

    // Act
    const out = writeAndFlush(schema, {}, rows);

    // Assess
    expect(out).toEqual([
      { row: { id: 1, name: 'C' }, kind: I, seq: 2 },
      { row: { id: 2, name: 'B' }, kind: I, seq: 1 },
    ]);
  });

  it('a final -D means the key is absent: level-0 output keeps the -D, a read drops it', () => {
    const rows = [
      { id: 1, name: 'A' },
      { id: 2, name: 'B' },
      { id: 1, name: 'A' },
    ];

    const flushed = writeAndFlush(schema, {}, rows, [I, I, D]);
    const read = mergeRecords(schema, {}, [flushed]);

    expect(flushed.map((r) => [r.row.id, r.kind])).toEqual([
      [1, D],
      [2, I],
    ]);
    expect(read.map((r) => r.row)).toEqual([{ id: 2, name: 'B' }]);
  });

  it('-U then +U in one flush collapses to the +U', () => {
    const out = writeAndFlush(
      schema,
      {},
      [
        { id: 1, name: 'A' },
        { id: 1, name: 'B' },
      ],
      [UB, UA],
    );

    expect(out).toEqual([{ row: { id: 1, name: 'B' }, kind: UA, seq: 1 }]);
  });

  it('ignore-delete drops retractions at write time', () => {
    const out = writeAndFlush(
      schema,
      { ignoreDelete: true },
      [
        { id: 1, name: 'A' },
        { id: 1, name: 'A' },
        { id: 2, name: 'B' },
      ],
      [I, D, UB],
    );

    expect(out.map((r) => [r.row, r.kind])).toEqual([[{ id: 1, name: 'A' }, I]]);
  });

  it('ignore-delete also skips retractions already in files', () => {
    const runs = [[{ row: { id: 1, name: 'A' }, kind: I, seq: 1 }], [{ row: { id: 1, name: 'A' }, kind: D, seq: 2 }]];

    const out = mergeRecords(schema, { ignoreDelete: true }, runs);

    expect(out.map((r) => r.row)).toEqual([{ id: 1, name: 'A' }]);
  });

  it('sequence.field decides which version is latest, before arrival order', () => {
    const s = schemaOf(['id INT', 'ts BIGINT', 'name STRING'], ['id']);
    const rows = [
      { id: 1, ts: 5n, name: 'new' },
      { id: 1, ts: 3n, name: 'old' },
    ];

    const asc = writeAndFlush(s, { sequenceFields: ['ts'] }, rows);
    const desc = writeAndFlush(s, { sequenceFields: ['ts'], sequenceDescending: true }, rows);

    expect(asc.map((r) => r.row.name)).toEqual(['new']);
    expect(desc.map((r) => r.row.name)).toEqual(['old']);
  });

  it('sequence.field with equal values falls back to arrival; NULL orders first', () => {
    const s = schemaOf(['id INT', 'ts BIGINT', 'name STRING'], ['id']);
    const rows = [
      { id: 1, ts: 5n, name: 'a' },
      { id: 1, ts: 5n, name: 'b' },
      { id: 2, ts: 1n, name: 'x' },
      { id: 2, ts: null, name: 'y' },
    ];

    const out = writeAndFlush(s, { sequenceFields: ['ts'] }, rows);

    expect(out.map((r) => r.row.name)).toEqual(['b', 'x']);
  });
});
