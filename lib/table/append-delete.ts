/**
 * DELETE FROM … WHERE on an append table (no primary key, so no -D record can name a row):
 * copy-on-write, as Paimon's Spark DELETE on append tables does. Every live file holding a
 * matching row is rewritten without those rows, and the rewrite is committed as one OVERWRITE
 * snapshot naming the files it removes and adds. Rows keep their sequence numbers, so the order
 * of what remains is unchanged. A stream skips the OVERWRITE like any other (with the warning
 * event), so a streaming reader does not see the deletion.
 */
import { runLimited } from '../concurrency.js';
import { takeRows } from '../format/columns.js';
import { mergeConfigFromOptions } from '../mergetree/merge-config.js';
import { mergeEngineFor } from '../mergetree/merge-function.js';
import { mergeSortedRuns } from '../mergetree/sort-merge-reader.js';
import { commitRewrite, FileRewrite } from './file-rewrite.js';
import { planRead, readEntry } from './read.js';
import { predicateMatches, toPredicate, type Predicate } from './predicate.js';
import type { Table } from './table.js';
import type { CommitResult } from './writer.js';

/**
 * Removes the rows of append table `table` matching `where`; `rows` in the result is the number
 * removed. A `rewrite` action of the commit loop: a compaction or another rewrite that removed one
 * of the files first makes it plan again on the latest snapshot.
 */
export async function deleteWhereAppend(
  table: Table,
  where: string | Predicate,
  opts: { commitUser?: string; commitIdentifier?: string },
): Promise<CommitResult> {
  let removed = 0;
  const done = await commitRewrite(
    table,
    { commitUser: opts.commitUser ?? 'delete', commitIdentifier: opts.commitIdentifier },
    async (base) => {
      removed = 0;
      if (base === undefined) return undefined;
      const t = await table.latest();
      const predicate = toPredicate(where, t.schema.fields);
      // Partitions the predicate rules out are not read (the same pruning as a read).
      const { entries } = await planRead(t, base, { where: predicate });
      const engine = mergeEngineFor(mergeConfigFromOptions(t.options, t.schema.primaryKeys));
      const rewrite = new FileRewrite(t);
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
            await rewrite.add(
              { partition: e.partition, bucket: e.bucket, totalBuckets: e.totalBuckets, level: 0 },
              takeRows(rows, keep),
              e.file.fileSize / Math.max(1, e.file.rowCount),
            );
          }),
          4,
        );
      } catch (e) {
        // Nothing references what this plan wrote yet.
        await rewrite.abandon();
        throw e;
      }
      return removed === 0 ? undefined : rewrite;
    },
  );
  if (done.rewrite === undefined) return { alreadyCommitted: false, files: 0, rows: 0 };
  return {
    snapshot: done.snapshot,
    alreadyCommitted: done.alreadyCommitted,
    files: done.rewrite.counts.added,
    rows: removed,
  };
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
