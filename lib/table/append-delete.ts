/**
 * DELETE FROM … WHERE on an append table (no primary key, so no -D record can name a row):
 * copy-on-write, as Paimon's Spark DELETE on append tables does. Every live file holding a
 * matching row is rewritten without those rows, and the rewrite is committed as one OVERWRITE
 * snapshot naming the files it removes and adds. Rows keep their sequence numbers, so the order
 * of what remains is unchanged. A stream skips the OVERWRITE like any other (with the warning
 * event), so a streaming reader does not see the deletion.
 */
import { runLimited } from '../concurrency.js';
import { CommitConflictError } from '../errors.js';
import { takeRows } from '../format/columns.js';
import { mergeConfigFromOptions } from '../mergetree/merge-config.js';
import { mergeEngineFor } from '../mergetree/merge-function.js';
import { mergeSortedRuns } from '../mergetree/sort-merge-reader.js';
import { FileRewrite } from './file-rewrite.js';
import { planRead, readEntry } from './read.js';
import { predicateMatches, toPredicate, type Predicate } from './predicate.js';
import type { Table } from './table.js';
import type { CommitResult } from './writer.js';

/** Attempts when a compaction or another rewrite removed one of the files first. */
const MAX_ATTEMPTS = 5;

/** Removes the rows of append table `table` matching `where`; `rows` in the result is the number removed. */
export async function deleteWhereAppend(table: Table, where: string | Predicate, opts: { commitUser?: string; commitIdentifier?: string }): Promise<CommitResult> {
  for (let attempt = 1; ; attempt++) {
    const t = await table.latest();
    const snapshot = await t.snapshots.latest();
    if (!snapshot) return { alreadyCommitted: false, files: 0, rows: 0 };
    const predicate = toPredicate(where, t.schema.fields);
    // Partitions the predicate rules out are not read (the same pruning as a read).
    const { entries } = await planRead(t, snapshot, { where: predicate });
    const engine = mergeEngineFor(mergeConfigFromOptions(t.options, t.schema.primaryKeys));
    const rewrite = new FileRewrite(t);
    let removed = 0;
    let committing = false;
    try {
      await runLimited(
        entries.map((e) => async () => {
          // Through the current schema, with absolute sequence numbers (written back with base 0).
          const rows = mergeSortedRuns([{ table: await readEntry(t, e), sequenceBase: e.file.sequenceBase }], {
            schema: t.schema,
            keyColumns: [],
            engine,
            dropDeletes: false,
            keepKinds: true,
          });
          const matches = predicateMatches(rows, predicate, t.schema.fields);
          if (matches.length === 0) return;
          const keep = complement(matches, rows.numRows);
          removed += matches.length;
          rewrite.remove(e);
          await rewrite.add({ partition: e.partition, bucket: e.bucket, totalBuckets: e.totalBuckets, level: 0 }, takeRows(rows, keep), e.file.fileSize / Math.max(1, e.file.rowCount));
        }),
        4,
      );
      if (removed === 0) return { alreadyCommitted: false, files: 0, rows: 0 };
      committing = true;
      const result = await rewrite.commit({ commitUser: opts.commitUser ?? 'delete', commitIdentifier: opts.commitIdentifier });
      return { snapshot: result.snapshot, alreadyCommitted: result.alreadyCommitted, files: rewrite.counts.added, rows: removed };
    } catch (e) {
      // Before the commit, or on a conflict, nothing references what was written. Any other
      // commit failure is ambiguous: the files are left to orphan cleanup.
      if (!committing || e instanceof CommitConflictError) await rewrite.abandon();
      if (!(e instanceof CommitConflictError) || attempt >= MAX_ATTEMPTS) throw e;
    }
  }
}

/** The indices 0..n-1 not in the ascending list `drop`. */
function complement(drop: Uint32Array, n: number): Uint32Array {
  const keep = new Uint32Array(n - drop.length);
  let k = 0;
  let d = 0;
  for (let i = 0; i < n; i++) {
    if (d < drop.length && drop[d] === i) d++;
    else keep[k++] = i;
  }
  return keep;
}
