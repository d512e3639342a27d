/** The changelog between two images of the same keys. */
import { describe, expect, it } from 'vitest';
import { diffChangelog, rowsWithKeys } from '../../../lib/mergetree/changelog/diff.js';
import { ROW_KIND_NAMES, RowKind } from '../../../lib/schema/types.js';
import { physicalTable, recordsOf, schemaOf, type Rec } from '../fixtures.js';

const schema = schemaOf(['id INT NOT NULL', 'v STRING'], ['id']);

function image(rows: Array<[number, string | null, number?]>, seq: number): ReturnType<typeof physicalTable> {
  return physicalTable(
    schema,
    rows.map(([id, v, kind]): Rec => ({ row: { id, v }, kind: kind ?? RowKind.INSERT, seq })),
  );
}

function log(t: ReturnType<typeof physicalTable>): string[] {
  return recordsOf(schema, t).map((r) => `${ROW_KIND_NAMES[r.kind]}${r.row.id}=${r.row.v}@${r.seq}`);
}

describe('diffChangelog', () => {
  const before = image(
    [
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
      [5, 'x', RowKind.DELETE],
    ],
    1,
  );
  const after = image(
    [
      [1, null, RowKind.DELETE],
      [2, 'b'],
      [3, 'C'],
      [4, 'd'],
      [5, 'y'],
    ],
    9,
  );

  it('logs inserts, updates (before then after) and deletes in key order', () => {
    expect(log(diffChangelog(before, after, { schema, rowDeduplicate: false }))).toEqual([
      '-D1=a@1',
      '-U2=b@1',
      '+U2=b@9',
      '-U3=c@1',
      '+U3=C@9',
      '+I4=d@9',
      // A retraction in the before image means absent: the key comes back as an insert.
      '+I5=y@9',
    ]);
  });

  it('drops equal updates with row-deduplicate', () => {
    expect(log(diffChangelog(before, after, { schema, rowDeduplicate: true }))).toEqual([
      '-D1=a@1',
      '-U3=c@1',
      '+U3=C@9',
      '+I4=d@9',
      '+I5=y@9',
    ]);
  });

  it('treats NULL as a value when deduplicating', () => {
    const a = image([[1, null]], 1);
    const b = image([[1, 'z']], 2);
    expect(log(diffChangelog(a, b, { schema, rowDeduplicate: true }))).toEqual(['-U1=null@1', '+U1=z@2']);
    expect(log(diffChangelog(a, image([[1, null]], 2), { schema, rowDeduplicate: true }))).toEqual([]);
  });

  it('keeps only the rows whose key is probed', () => {
    const t = image(
      [
        [1, 'a'],
        [2, 'b'],
        [3, 'c'],
        [7, 'g'],
      ],
      1,
    );
    expect(
      log(
        rowsWithKeys(
          t,
          image(
            [
              [2, 'q'],
              [3, 'q'],
              [4, 'q'],
            ],
            5,
          ),
          ['id'],
        ),
      ),
    ).toEqual(['+I2=b@1', '+I3=c@1']);
  });
});
