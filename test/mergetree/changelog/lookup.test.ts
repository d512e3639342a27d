/** The lookup changelog producer: before images looked up in the higher levels. */
import { describe, expect, it } from 'vitest';
import type { DataFileMeta } from '../../../lib/manifest/types.js';
import type { JsonValue } from '../../../lib/schema/value-codec.js';
import { lookupCandidates, lookupChangelog } from '../../../lib/mergetree/changelog/lookup.js';
import { mergeConfig, type MergeConfig } from '../../../lib/mergetree/merge-config.js';
import { mergeEngineFor } from '../../../lib/mergetree/merge-function.js';
import { ROW_KIND_NAMES, RowKind, type TableSchema } from '../../../lib/schema/types.js';
import { physicalTable, recordsOf, schemaOf, type Rec } from '../fixtures.js';

function input(schema: TableSchema, level: number, recs: Rec[], sequenceBase = 0) {
  const ids = recs.map((r) => r.row.id as number);
  const file = {
    fileName: `f-${level}-${ids[0]}`,
    level,
    sequenceBase,
    minKey: [ids[0]],
    maxKey: [ids[ids.length - 1]],
  } as DataFileMeta;
  return { file, table: physicalTable(schema, recs) };
}

/** Files as lookup runs, read two rows a chunk (the probe crosses chunk boundaries). */
function runs(inputs: { file: DataFileMeta; table: ReturnType<typeof physicalTable> }[]) {
  return inputs.map((i) => ({
    file: i.file,
    chunks: (async function* () {
      for (let at = 0; at < i.table.numRows; at += 2) yield i.table.slice(at, at + 2);
    })(),
  }));
}

function log(schema: TableSchema, t: ReturnType<typeof physicalTable>, col: string): string[] {
  return recordsOf(schema, t).map((r) => `${ROW_KIND_NAMES[r.kind]}${r.row.id}=${r.row[col]}`);
}

const rec = (id: number, v: unknown, seq: number, kind: number = RowKind.INSERT): Rec => ({
  row: { id, v: v as never },
  kind,
  seq,
});

describe('lookupChangelog', () => {
  const schema = schemaOf(['id INT NOT NULL', 'v STRING'], ['id']);
  const opts = (rowDeduplicate: boolean, merge: Partial<MergeConfig> = {}) => ({
    schema,
    engine: mergeEngineFor(mergeConfig(merge)),
    rowDeduplicate,
  });
  // Level 1 is newer than level 3; key 6 and 7 live only in level 3.
  const l1 = input(schema, 1, [
    rec(1, 'a', 20),
    rec(2, 'a', 20),
    rec(3, 'a', 20),
    rec(4, 'a', 20),
    rec(5, 'gone', 20, RowKind.DELETE),
  ]);
  const l3 = input(schema, 3, [
    rec(4, 'old', 1),
    rec(5, 'old', 1),
    rec(6, 'old', 1),
    rec(7, 'old', 1),
    rec(8, 'old', 1),
  ]);
  const l0 = input(
    schema,
    0,
    [
      rec(2, 'b', 0),
      rec(3, 'a', 1),
      rec(5, 'back', 2),
      rec(6, 'new', 3),
      rec(7, null, 4, RowKind.DELETE),
      rec(9, 'n', 5),
    ],
    100,
  );

  it('logs each level-0 key against its value in the higher levels', async () => {
    expect(log(schema, await lookupChangelog(runs([l0]), runs([l1, l3]), opts(false)), 'v')).toEqual([
      '-U2=a',
      '+U2=b',
      '-U3=a',
      '+U3=a',
      // Deleted in level 1, so absent before despite level 3.
      '+I5=back',
      '-U6=old',
      '+U6=new',
      '-D7=old',
      '+I9=n',
    ]);
  });

  it('suppresses no-op updates with row-deduplicate', async () => {
    expect(log(schema, await lookupChangelog(runs([l0]), runs([l1, l3]), opts(true)), 'v')).not.toContain('-U3=a');
  });

  it('logs the newest of several level-0 versions, merged', async () => {
    const newer = input(schema, 0, [rec(2, 'c', 0)], 200);
    expect(log(schema, await lookupChangelog(runs([l0, newer]), runs([l1, l3]), opts(false)), 'v').slice(0, 2)).toEqual(
      ['-U2=a', '+U2=c'],
    );
  });

  it('never logs an update under first-row', async () => {
    const first = await lookupChangelog(runs([input(schema, 0, [rec(2, 'z', 0), rec(42, 'z', 0)], 100)]), runs([l1]), {
      ...opts(false, { engine: 'first-row' }),
    });
    expect(log(schema, first, 'v')).toEqual(['+I42=z']);
  });

  it('folds aggregates: before is the merge of every higher level', async () => {
    const agg = schemaOf(['id INT NOT NULL', 'n BIGINT NOT NULL'], ['id']);
    const sum = { engine: 'aggregation' as const, aggregateFunctions: { n: 'sum' as const } };
    const r = (id: number, n: bigint, seq: number): Rec => ({ row: { id, n }, kind: RowKind.INSERT, seq });
    const out = await lookupChangelog(
      runs([input(agg, 0, [r(1, 3n, 0)], 50)]),
      runs([input(agg, 1, [r(1, 10n, 9)]), input(agg, 4, [r(1, 5n, 2)])]),
      { schema: agg, engine: mergeEngineFor(mergeConfig(sum)), rowDeduplicate: false },
    );
    expect(log(agg, out, 'n')).toEqual(['-U1=15', '+U1=18']);
  });

  it('reads a higher file only when the level-0 keys reach it, and never one they pass by', async () => {
    const cmp = (a: JsonValue[], b: JsonValue[]) => (a[0] as number) - (b[0] as number);
    // Level-0 keys 2..9 in pieces of two rows; a level-2 file of keys 10..12 lies past them, one
    // of keys 0..1 before them: neither may be read.
    const beyond = {
      file: { ...l3.file, fileName: 'beyond', level: 2, minKey: [10], maxKey: [12] } as DataFileMeta,
      chunks: unreadable('beyond'),
    };
    const below = {
      file: { ...l3.file, fileName: 'below', level: 2, minKey: [0], maxKey: [1] } as DataFileMeta,
      chunks: unreadable('below'),
    };
    const out = await lookupChangelog(runs([l0]), [below, ...runs([l1, l3]), beyond], {
      ...opts(false),
      compareKeys: cmp,
    });
    expect(log(schema, out, 'v')).toEqual(
      log(schema, await lookupChangelog(runs([l0]), runs([l1, l3]), opts(false)), 'v'),
    );
  });
});

/** A file's chunks that fail when read. */
// biome-ignore lint/correctness/useYield: it throws before yielding, as a file that fails when read
async function* unreadable(name: string): AsyncGenerator<ReturnType<typeof physicalTable>> {
  throw new Error(`${name} was read`);
}

describe('lookupCandidates', () => {
  const cmp = (a: JsonValue[], b: JsonValue[]) => (a[0] as number) - (b[0] as number);
  const f = (level: number, min: number, max: number) =>
    ({ fileName: `${level}-${min}`, level, minKey: [min], maxKey: [max] }) as DataFileMeta;

  it('keeps the higher-level files overlapping the level-0 key range', () => {
    const got = lookupCandidates(
      [f(0, 10, 20), f(0, 15, 30)],
      [f(1, 1, 9), f(1, 10, 12), f(2, 25, 40), f(3, 31, 50), f(0, 10, 20)],
      cmp,
    );
    expect(got.map((x) => x.fileName)).toEqual(['1-10', '2-25']);
  });
});
