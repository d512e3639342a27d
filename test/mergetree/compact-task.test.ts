/**
 * The compaction task over an in-memory file set: upgrades without rewrite, rewrites of
 * overlapping sections, small-file rewrites, deletes and the max level, rolling output files.
 */
import type * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import type { DataFileMeta } from '../../lib/manifest/types.js';
import type { JsonValue } from '../../lib/schema/value-codec.js';
import { runCompactTask, type CompactFileIO } from '../../lib/mergetree/compact-task.js';
import type { DataFileSink } from '../../lib/mergetree/rolling-writer.js';
import { concatTables } from '../../lib/format/columns.js';
import { mergeConfig } from '../../lib/mergetree/merge-config.js';
import { mergeEngineFor } from '../../lib/mergetree/merge-function.js';
import { RowKind } from '../../lib/schema/types.js';
import { physicalTable, recordsOf, schemaOf, type Rec } from './fixtures.js';

const schema = schemaOf(['id INT NOT NULL', 'v STRING'], ['id']);
const compareKeys = (a: JsonValue[], b: JsonValue[]) => (a[0] as number) - (b[0] as number);

/** An in-memory file set: the io the task runs against, and counts of what it did. */
class MemoryFiles implements CompactFileIO {
  readonly tables = new Map<string, arrow.Table>();
  reads = 0;
  writes = 0;
  private n = 0;

  add(level: number, recs: Rec[], opts: { fileSize?: number; sequenceBase?: number } = {}): DataFileMeta {
    const table = physicalTable(schema, recs);
    const meta = this.metaOf(`in-${++this.n}`, table, level, opts.fileSize ?? 1000, opts.sequenceBase ?? 0);
    this.tables.set(meta.fileName, table);
    return meta;
  }

  /** Rows per chunk a file is read in (small: the streamed merge meets many chunk boundaries). */
  chunkRows = 3;

  async *chunks(file: DataFileMeta): AsyncGenerator<arrow.Table> {
    this.reads++;
    const t = this.tables.get(file.fileName)!;
    for (let at = 0; at < t.numRows; at += this.chunkRows) yield t.slice(at, at + this.chunkRows);
  }

  async create(level: number): Promise<DataFileSink<DataFileMeta>> {
    const parts: arrow.Table[] = [];
    return {
      add: async (rows) => void parts.push(rows),
      finish: async () => {
        this.writes++;
        const data = concatTables(parts, parts[0].schema);
        const meta = this.metaOf(`out-${++this.n}`, data, level, 100 * data.numRows, 0);
        this.tables.set(meta.fileName, data);
        return meta;
      },
      discard: async () => undefined,
    };
  }

  private metaOf(
    fileName: string,
    table: arrow.Table,
    level: number,
    fileSize: number,
    sequenceBase: number,
  ): DataFileMeta {
    const recs = recordsOf(schema, table);
    const seqs = recs.map((r) => r.seq + sequenceBase);
    return {
      fileName,
      fileSize,
      rowCount: recs.length,
      minKey: [recs[0].row.id as number],
      maxKey: [recs[recs.length - 1].row.id as number],
      sequenceBase,
      minSequenceNumber: Math.min(...seqs),
      maxSequenceNumber: Math.max(...seqs),
      schemaId: 0,
      level,
      creationTime: 0,
      deleteRowCount: recs.filter((r) => r.kind === RowKind.DELETE || r.kind === RowKind.UPDATE_BEFORE).length,
      fileSource: 'APPEND',
    };
  }
}

/** Records with ids in [from, to], all +I, value `tag`, sequence `seq`. */
function span(from: number, to: number, tag: string, seq: number, kind: number = RowKind.INSERT): Rec[] {
  const out: Rec[] = [];
  for (let id = from; id <= to; id++) out.push({ row: { id, v: tag }, kind, seq });
  return out;
}

const options = (
  o: { dropDeletes?: boolean; compactionFileSize?: number; targetFileSize?: number; maxLevel?: number } = {},
) => ({
  schema,
  engine: mergeEngineFor(mergeConfig()),
  compareKeys,
  maxLevel: o.maxLevel ?? 5,
  dropDeletes: o.dropDeletes ?? false,
  targetFileSize: o.targetFileSize ?? 1 << 30,
  compactionFileSize: o.compactionFileSize ?? 0,
});

describe('runCompactTask', () => {
  it('upgrades non-overlapping large files without reading or writing them', async () => {
    const files = new MemoryFiles();
    const a = files.add(0, span(1, 10, 'a', 1));
    const b = files.add(0, span(20, 30, 'b', 2));

    const result = await runCompactTask({ outputLevel: 3, files: [b, a] }, options(), files);

    expect(files.reads).toBe(0);
    expect(files.writes).toBe(0);
    expect(result.upgradedFiles).toBe(2);
    expect(result.before.map((f) => f.fileName).sort()).toEqual([a.fileName, b.fileName]);
    expect(result.after.map((f) => [f.fileName, f.level]).sort()).toEqual([
      [a.fileName, 3],
      [b.fileName, 3],
    ]);
    // An upgraded file keeps everything but its level, its sequence base included.
    expect(result.after.find((f) => f.fileName === a.fileName)).toEqual({ ...a, level: 3 });
  });

  it('rewrites overlapping files through the merge engine and upgrades the file apart', async () => {
    const files = new MemoryFiles();
    const old = files.add(2, span(1, 10, 'old', 1));
    const fresh = files.add(0, span(5, 12, 'new', 0), { sequenceBase: 100 });
    const apart = files.add(0, span(50, 60, 'apart', 7));

    const result = await runCompactTask({ outputLevel: 2, files: [fresh, apart, old] }, options(), files);

    expect(result.rewrittenFiles).toBe(2);
    expect(result.upgradedFiles).toBe(1);
    const written = result.after.filter((f) => f.fileName.startsWith('out-'));
    expect(written).toHaveLength(1);
    const recs = recordsOf(schema, files.tables.get(written[0].fileName)!);
    expect(recs.map((r) => [r.row.id, r.row.v, r.seq])).toEqual([
      ...span(1, 4, 'old', 1).map((r) => [r.row.id, 'old', 1]),
      // The newer version wins and carries its absolute sequence number (base + stored).
      ...span(5, 12, 'new', 100).map((r) => [r.row.id, 'new', 100]),
    ]);
    expect(result.after.find((f) => f.fileName === apart.fileName)?.level).toBe(2);
  });

  it('rewrites small non-overlapping files together instead of upgrading them', async () => {
    const files = new MemoryFiles();
    const a = files.add(0, span(1, 3, 'a', 1), { fileSize: 10 });
    const b = files.add(0, span(7, 9, 'b', 2), { fileSize: 10 });

    const result = await runCompactTask({ outputLevel: 1, files: [b, a] }, options({ compactionFileSize: 100 }), files);

    expect(result.upgradedFiles).toBe(0);
    expect(result.after).toHaveLength(1);
    expect(recordsOf(schema, files.tables.get(result.after[0].fileName)!).map((r) => r.row.id)).toEqual([
      1, 2, 3, 7, 8, 9,
    ]);
  });

  it('upgrades a lone small file: there is nothing to merge it with', async () => {
    const files = new MemoryFiles();
    const a = files.add(0, span(1, 3, 'a', 1), { fileSize: 10 });
    const result = await runCompactTask({ outputLevel: 1, files: [a] }, options({ compactionFileSize: 100 }), files);
    expect(result.upgradedFiles).toBe(1);
    expect(files.writes).toBe(0);
  });

  it('rewrites a file with deletes instead of moving it into the max level, dropping the deletes', async () => {
    const files = new MemoryFiles();
    const withDeletes = files.add(0, [...span(1, 2, 'x', 1), ...span(3, 3, '', 1, RowKind.DELETE)]);

    const toMax = await runCompactTask({ outputLevel: 5, files: [withDeletes] }, options({ dropDeletes: true }), files);

    expect(toMax.upgradedFiles).toBe(0);
    expect(recordsOf(schema, files.tables.get(toMax.after[0].fileName)!).map((r) => r.row.id)).toEqual([1, 2]);
    // Below the max level the same file is simply moved up, deletes and all.
    const below = await runCompactTask({ outputLevel: 4, files: [withDeletes] }, options({ dropDeletes: true }), files);
    expect(below.upgradedFiles).toBe(1);
  });

  it('keeps retractions in a rewrite unless deletes may be dropped', async () => {
    const files = new MemoryFiles();
    const base = files.add(2, span(1, 5, 'v', 1));
    const del = files.add(0, span(2, 3, '', 9, RowKind.DELETE));
    const unit = { outputLevel: 2, files: [del, base] };

    const kept = await runCompactTask(unit, options({ dropDeletes: false }), files);
    const dropped = await runCompactTask(unit, options({ dropDeletes: true }), files);

    const kinds = (r: typeof kept) =>
      recordsOf(schema, files.tables.get(r.after[0].fileName)!).map((x) => [x.row.id, x.kind]);
    expect(kinds(kept)).toEqual([
      [1, 0],
      [2, 3],
      [3, 3],
      [4, 0],
      [5, 0],
    ]);
    expect(kinds(dropped)).toEqual([
      [1, 0],
      [4, 0],
      [5, 0],
    ]);
  });

  it('leaves a file already at the output level where it is', async () => {
    const files = new MemoryFiles();
    const top = files.add(5, span(1, 5, 'top', 1));
    const fresh = files.add(0, span(10, 12, 'new', 2));
    const result = await runCompactTask({ outputLevel: 5, files: [fresh, top] }, options({ dropDeletes: true }), files);
    expect(result.before.map((f) => f.fileName)).toEqual([fresh.fileName]);
    expect(result.after.map((f) => [f.fileName, f.level])).toEqual([[fresh.fileName, 5]]);
  });

  it('rolls rewritten output into key-ordered, non-overlapping files of about the target size', async () => {
    const files = new MemoryFiles();
    // 100 bytes a row on input: a 1000-byte target gives 10 rows a file.
    const a = files.add(0, span(1, 40, 'a', 1), { fileSize: 4000 });
    const b = files.add(0, span(30, 64, 'b', 2), { fileSize: 3500 });

    const result = await runCompactTask({ outputLevel: 1, files: [b, a] }, options({ targetFileSize: 1000 }), files);

    expect(result.after.map((f) => f.rowCount)).toEqual([10, 10, 10, 10, 10, 10, 4]);
    for (let i = 1; i < result.after.length; i++)
      expect(compareKeys(result.after[i - 1].maxKey, result.after[i].minKey)).toBeLessThan(0);
    const ids = result.after.flatMap((f) => recordsOf(schema, files.tables.get(f.fileName)!).map((r) => r.row.id));
    expect(ids).toEqual(Array.from({ length: 64 }, (_, i) => i + 1));
  });
});
