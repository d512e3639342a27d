/** The full-compaction changelog producer, observing a compaction into the max level. */
import type * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import type { DataFileMeta } from '../../../lib/manifest/types.js';
import type { JsonValue } from '../../../lib/schema/value-codec.js';
import { FullCompactionChangelog } from '../../../lib/mergetree/changelog/full-compaction.js';
import { runCompactTask, type CompactFileIO } from '../../../lib/mergetree/compact-task.js';
import { mergeConfig } from '../../../lib/mergetree/merge-config.js';
import { mergeEngineFor } from '../../../lib/mergetree/merge-function.js';
import { concatTables } from '../../../lib/format/columns.js';
import { ROW_KIND_NAMES, RowKind } from '../../../lib/schema/types.js';
import { physicalTable, recordsOf, schemaOf, type Rec } from '../fixtures.js';

const schema = schemaOf(['id INT NOT NULL', 'v STRING'], ['id']);
const rec = (id: number, v: string | null, seq: number, kind: number = RowKind.INSERT): Rec => ({
  row: { id, v },
  kind,
  seq,
});

function setup() {
  const tables = new Map<string, arrow.Table>();
  let n = 0;
  const add = (level: number, recs: Rec[], fileSize = 1000): DataFileMeta => {
    const fileName = `f${++n}`;
    tables.set(fileName, physicalTable(schema, recs));
    return {
      fileName,
      fileSize,
      rowCount: recs.length,
      level,
      sequenceBase: 0,
      schemaId: 0,
      creationTime: 0,
      fileSource: 'APPEND',
      minKey: [recs[0].row.id as number],
      maxKey: [recs[recs.length - 1].row.id as number],
      minSequenceNumber: Math.min(...recs.map((r) => r.seq)),
      maxSequenceNumber: Math.max(...recs.map((r) => r.seq)),
      deleteRowCount: recs.filter((r) => r.kind === RowKind.DELETE).length,
    };
  };
  const io: CompactFileIO = {
    async *chunks(f) {
      // Two rows a chunk: the observer sees the section in several key intervals.
      const t = tables.get(f.fileName)!;
      for (let at = 0; at < t.numRows; at += 2) yield t.slice(at, at + 2);
    },
    create: async (level) => {
      const parts: arrow.Table[] = [];
      return {
        add: async (rows) => void parts.push(rows),
        finish: async () => {
          const fileName = `out${++n}`;
          const data = concatTables(parts, parts[0].schema);
          tables.set(fileName, data);
          return { fileName, level, rowCount: data.numRows, minKey: [0], maxKey: [0] } as DataFileMeta;
        },
        discard: async () => undefined,
      };
    },
  };
  return { add, io };
}

async function fullChangelog(rowDeduplicate: boolean, memoryBudget = Infinity): Promise<string[]> {
  const { add, io } = setup();
  const top = add(5, [rec(1, 'a', 1), rec(2, 'a', 1), rec(3, 'a', 1), rec(4, 'a', 1)]);
  const mid = add(2, [rec(2, 'b', 5), rec(3, 'a', 5)]);
  const l0 = add(0, [rec(4, null, 9, RowKind.DELETE), rec(6, 'new', 9)]);
  const apart = add(0, [rec(20, 'x', 8), rec(21, 'y', 8)]);
  const engine = mergeEngineFor(mergeConfig());
  const log = new FullCompactionChangelog({ schema, engine, maxLevel: 5, rowDeduplicate, chunks: (f) => io.chunks(f) });
  const cmp = (a: JsonValue[], b: JsonValue[]) => (a[0] as number) - (b[0] as number);
  await runCompactTask(
    { outputLevel: 5, files: [apart, l0, mid, top] },
    {
      schema,
      engine,
      compareKeys: cmp,
      maxLevel: 5,
      dropDeletes: true,
      targetFileSize: 1 << 30,
      compactionFileSize: 0,
      memoryBudget,
    },
    io,
    log,
  );
  return recordsOf(schema, log.changelog()).map((r) => `${ROW_KIND_NAMES[r.kind]}${r.row.id}=${r.row.v}`);
}

describe('FullCompactionChangelog', () => {
  it('logs the same when the section is merged through spilled runs (a 1-byte memory budget)', async () => {
    expect(await fullChangelog(false, 1)).toEqual(await fullChangelog(false));
    expect(await fullChangelog(true, 1)).toEqual(await fullChangelog(true));
  });

  it('logs the difference between the old and the new max level, in key order', async () => {
    expect(await fullChangelog(false)).toEqual([
      // Key 1 had no record but the max level's: unchanged, not logged.
      '-U2=a',
      '+U2=b',
      '-U3=a',
      '+U3=a',
      '-D4=a',
      '+I6=new',
      // Moved into the max level without rewrite: every row is new there.
      '+I20=x',
      '+I21=y',
    ]);
  });

  it('drops equal updates with row-deduplicate', async () => {
    expect(await fullChangelog(true)).toEqual(['-U2=a', '+U2=b', '-D4=a', '+I6=new', '+I20=x', '+I21=y']);
  });
});
