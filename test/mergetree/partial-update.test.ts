import { describe, expect, it } from 'vitest';
import { InvalidArgumentError, OptionError } from '../../lib/errors.js';
import { rowsToTable } from '../../lib/format/columns.js';
import type { MergeConfig } from '../../lib/mergetree/merge-config.js';
import { D, I, UB, bufferOf, mergeRecords, schemaOf, writeAndFlush } from './fixtures.js';

const pu = (more: Partial<MergeConfig> = {}): Partial<MergeConfig> => ({ engine: 'partial-update', ...more });

describe('partial-update', () => {
  it('non-null fields overwrite, NULLs keep the previous value', () => {
    const schema = schemaOf(['id INT', 'a STRING', 'b STRING', 'c INT'], ['id']);
    const rows = [
      { id: 1, a: 'a1', b: null, c: 1 },
      { id: 1, a: null, b: 'b2', c: null },
      { id: 1, a: 'a3', b: null, c: null },
    ];

    const out = writeAndFlush(schema, pu(), rows);

    expect(out).toEqual([{ row: { id: 1, a: 'a3', b: 'b2', c: 1 }, kind: I, seq: 2 }]);
  });

  it('builds the row across files in sequence order, whatever the run order', () => {
    const schema = schemaOf(['id INT', 'a STRING', 'b STRING'], ['id']);
    const newer = [{ row: { id: 1, a: null, b: 'new-b' }, kind: I, seq: 20 }];
    const older = [{ row: { id: 1, a: 'old-a', b: 'old-b' }, kind: I, seq: 10 }];

    expect(mergeRecords(schema, pu(), [newer, older]).map((r) => r.row)).toEqual([{ id: 1, a: 'old-a', b: 'new-b' }]);
  });

  it('sequence groups: a group moves only with a group sequence ≥ the accumulated one; NULL sequence skips it', () => {
    const schema = schemaOf(['id INT', 'a STRING', 'b STRING', 'g1 INT', 'c STRING', 'g2 INT'], ['id']);
    const cfg = pu({
      sequenceGroups: [
        { sequenceFields: ['g1'], fields: ['a', 'b'] },
        { sequenceFields: ['g2'], fields: ['c'] },
      ],
    });
    const rows = [
      { id: 1, a: 'a@5', b: 'b@5', g1: 5, c: 'c@1', g2: 1 },
      // An older group-1 version arrives late: ignored. Group 2 moves, NULL included.
      { id: 1, a: 'a@3', b: 'b@3', g1: 3, c: null, g2: 2 },
      // Same group-1 sequence: ≥ wins, NULLs overwrite inside a group. Group 2 sequence NULL: skipped.
      { id: 1, a: 'a@5b', b: null, g1: 5, c: 'ignored', g2: null },
    ];

    const out = writeAndFlush(schema, cfg, rows);

    expect(out[0].row).toEqual({ id: 1, a: 'a@5b', b: null, g1: 5, c: null, g2: 2 });
  });

  it('a group with two sequence fields compares them in order', () => {
    const schema = schemaOf(['id INT', 'v STRING', 's1 INT', 's2 INT'], ['id']);
    const cfg = pu({ sequenceGroups: [{ sequenceFields: ['s1', 's2'], fields: ['v'] }] });
    const rows = [
      { id: 1, v: 'x', s1: 1, s2: 9 },
      { id: 1, v: 'y', s1: 2, s2: 0 },
      { id: 1, v: 'z', s1: 1, s2: 99 },
    ];

    expect(writeAndFlush(schema, cfg, rows)[0].row).toEqual({ id: 1, v: 'y', s1: 2, s2: 0 });
  });

  it('group columns may aggregate; an older version folds in reversed', () => {
    const schema = schemaOf(['id INT', 'total INT', 'names STRING', 'g INT'], ['id']);
    const cfg = pu({
      sequenceGroups: [{ sequenceFields: ['g'], fields: ['total', 'names'] }],
      aggregateFunctions: { total: 'sum', names: 'listagg' },
    });
    const rows = [
      { id: 1, total: 10, names: 'b', g: 2 },
      { id: 1, total: 5, names: 'a', g: 1 },
      { id: 1, total: 1, names: 'c', g: 3 },
    ];

    expect(writeAndFlush(schema, cfg, rows)[0].row).toEqual({ id: 1, total: 16, names: 'a,b,c', g: 3 });
  });

  it('rejects -U/-D by default and lists the ways to accept them', () => {
    const schema = schemaOf(['id INT', 'a STRING'], ['id']);
    const write = () =>
      writeAndFlush(
        schema,
        pu(),
        [
          { id: 1, a: 'x' },
          { id: 1, a: 'x' },
        ],
        [I, D],
      );

    expect(write).toThrow(InvalidArgumentError);
    expect(write).toThrow(/ignore-delete.*remove-record-on-delete.*sequence groups/);
  });

  it('ignore-delete skips retractions', () => {
    const schema = schemaOf(['id INT', 'a STRING'], ['id']);
    const runs = [[{ row: { id: 1, a: 'x' }, kind: I, seq: 1 }], [{ row: { id: 1, a: null }, kind: D, seq: 2 }]];

    expect(mergeRecords(schema, pu({ ignoreDelete: true }), runs).map((r) => r.row)).toEqual([{ id: 1, a: 'x' }]);
  });

  it('remove-record-on-delete: -D deletes the row, -U is ignored, a later insert starts from scratch', () => {
    const schema = schemaOf(['id INT', 'a STRING', 'b STRING'], ['id']);
    const cfg = pu({ partialUpdateRemoveRecordOnDelete: true });
    const rows = [
      { id: 1, a: 'a', b: 'b' },
      { id: 1, a: null, b: null },
      { id: 1, a: null, b: 'b2' },
      { id: 2, a: 'keep', b: null },
      { id: 2, a: 'keep', b: null },
    ];

    const out = writeAndFlush(schema, cfg, rows, [I, D, I, I, UB]);
    const read = mergeRecords(schema, cfg, [out]);

    expect(out.map((r) => [r.row, r.kind])).toEqual([
      [{ id: 1, a: null, b: 'b2' }, I],
      [{ id: 2, a: 'keep', b: null }, I],
    ]);
    expect(read.length).toBe(2);
    expect(
      writeAndFlush(
        schema,
        cfg,
        [
          { id: 3, a: 'x', b: 'y' },
          { id: 3, a: 'x', b: 'y' },
        ],
        [I, D],
      ).map((r) => [r.row, r.kind]),
    ).toEqual([[{ id: 3, a: null, b: null }, D]]);
  });

  it('with sequence groups a retraction clears the group; remove-record-on-sequence-group deletes the row', () => {
    const schema = schemaOf(['id INT', 'a STRING', 'g1 INT', 'c STRING', 'g2 INT'], ['id']);
    const groups = [
      { sequenceFields: ['g1'], fields: ['a'] },
      { sequenceFields: ['g2'], fields: ['c'] },
    ];
    const rows = [
      { id: 1, a: 'a', g1: 1, c: 'c', g2: 1 },
      { id: 1, a: 'a', g1: 2, c: null, g2: null },
    ];

    const cleared = writeAndFlush(schema, pu({ sequenceGroups: groups }), rows, [I, UB]);
    const removed = writeAndFlush(
      schema,
      pu({ sequenceGroups: groups, partialUpdateRemoveRecordOnSequenceGroup: ['g1'] }),
      rows,
      [I, D],
    );

    expect(cleared.map((r) => [r.row, r.kind])).toEqual([[{ id: 1, a: null, g1: 2, c: 'c', g2: 1 }, I]]);
    expect(removed.map((r) => r.kind)).toEqual([D]);
  });

  it('a NULL for a NOT NULL column is an error', () => {
    const schema = schemaOf(['id INT', 'a STRING NOT NULL', 'b STRING'], ['id']);
    // rowsToTable refuses NULL in a NOT NULL column, so the input is built with a nullable twin schema.
    const twin = schemaOf(['id INT', 'a STRING', 'b STRING'], ['id']);
    const b = bufferOf(schema, pu());
    b.addTable(
      rowsToTable(twin.fields, [
        { id: 1, a: 'x', b: null },
        { id: 1, a: null, b: 'y' },
      ]),
    );

    expect(() => b.flush()).toThrow(/column a is NOT NULL/);
  });

  it('rejects contradictory or misplaced options', () => {
    const schema = schemaOf(['id INT', 'a INT', 'g INT'], ['id']);

    expect(() => bufferOf(schema, pu({ ignoreDelete: true, partialUpdateRemoveRecordOnDelete: true }))).toThrow(
      OptionError,
    );
    expect(() => bufferOf(schema, pu({ aggregateFunctions: { a: 'sum' } }))).toThrow(/only inside a sequence group/);
    expect(() => bufferOf(schema, pu({ sequenceGroups: [{ sequenceFields: ['g'], fields: ['id'] }] }))).toThrow(
      /primary key column id/,
    );
    expect(() => bufferOf(schema, pu({ sequenceGroups: [{ sequenceFields: ['nope'], fields: ['a'] }] }))).toThrow(
      /names column nope/,
    );
  });
});
