/**
 * What `varve write` and `varve delete` share: the flags turned into a write job
 * (lib/table/write-job.ts) and its one-line summary.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { Table } from '../../table/table.js';
import type { CommitResult, OverwriteMode } from '../../table/writer.js';
import type { CliContext } from '../context.js';
import { inputFormat } from '../parse-flags.js';

export interface WriteFlags {
  format?: string;
  skipInvalid?: string;
  commitIdentifier?: string;
  commitUser?: string;
  overwrite?: boolean;
  dynamicPartitionOverwrite?: string;
  where?: string;
}

/** The overwrite mode of `--overwrite [--dynamic-partition-overwrite B]`, or undefined for an upsert. */
function overwriteModeOf(table: Table, o: WriteFlags): OverwriteMode | undefined {
  const flag = o.dynamicPartitionOverwrite;
  if (!o.overwrite) {
    if (flag !== undefined) throw new InvalidArgumentError('--dynamic-partition-overwrite goes with --overwrite');
    return undefined;
  }
  if (flag !== undefined && flag !== 'true' && flag !== 'false')
    throw new InvalidArgumentError(`--dynamic-partition-overwrite must be true or false, got "${flag}"`);
  const dynamic =
    (flag !== undefined ? flag === 'true' : (table.options.get('dynamic-partition-overwrite') as boolean)) &&
    table.schema.partitionKeys.length > 0;
  return dynamic ? 'dynamic' : 'all';
}

/** The line a finished write prints. */
function writeSummary(
  result: CommitResult,
  deletes: boolean,
  overwrite: OverwriteMode | undefined,
  rejected: number,
  rejectsFile: string | undefined,
): string {
  if (result.alreadyCommitted) {
    const where = result.snapshot
      ? `as snapshot ${result.snapshot.id}`
      : `as snapshot ${result.expiredSnapshotId}, which has expired since`;
    return `already committed ${where}: nothing written twice\n`;
  }
  const verb = deletes
    ? 'deleted'
    : overwrite
      ? `overwrote ${overwrite === 'all' ? 'the table' : 'the partitions written to'} with`
      : 'wrote';
  const rejectedText = rejected ? `, ${rejected} rejected (see ${rejectsFile})` : '';
  return `${verb} ${result.rows} rows in ${result.files} files, snapshot ${result.snapshot?.id}${rejectedText}\n`;
}

/** The action of `write` (`deletes` false) and `delete` (true): rows from a file or stdin in one commit. */
export function writeRowsAction({ catalog, out, status }: CliContext, deletes: boolean) {
  return async (name: string, file: string | undefined, o: WriteFlags): Promise<void> => {
    const { runWriteJob } = await import('../../table/write-job.js');
    const { schemaChangeEvent } = await import('../../stream/schema-change.js');
    const { writeProgress } = await import('../write-progress.js');
    const table = await catalog().getTable(name);
    if (deletes && o.where !== undefined) {
      if (file !== undefined)
        throw new InvalidArgumentError('give either --where or a file of keys to delete, not both');
      const result = await table.deleteWhere(o.where, {
        commitUser: o.commitUser,
        commitIdentifier: o.commitIdentifier,
      });
      out(
        result.rows === 0
          ? 'no row matches: nothing deleted\n'
          : `deleted ${result.rows} rows, snapshot ${result.snapshot?.id}\n`,
      );
      return;
    }
    const overwrite = overwriteModeOf(table, o);
    const format = await inputFormat(file, o.format);
    const source = file && file !== '-' ? { file } : { stream: process.stdin as AsyncIterable<Uint8Array> };
    const { commit, rejected } = await runWriteJob(table, source, {
      format,
      deletes,
      rejectsFile: o.skipInvalid,
      commitUser: o.commitUser,
      commitIdentifier: o.commitIdentifier,
      overwrite,
      progress: writeProgress,
      onSchemaChange: (from, to) => {
        const event = schemaChangeEvent(0, from, to);
        status(
          `the schema of ${table.name} changed during the write (schema ${event.from} -> ${event.to}: ${event.changes.join('; ') || 'options'}); writing again under schema ${event.to}\n`,
        );
      },
    });
    if (commit) out(writeSummary(commit, deletes, overwrite, rejected, o.skipInvalid));
    else
      out(
        `nothing to ${deletes ? 'delete' : 'write'}${rejected ? ` (${rejected} rejected, see ${o.skipInvalid})` : ''}\n`,
      );
  };
}
