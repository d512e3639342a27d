/** `varve write`: rows from a file or stdin, one commit per call. */
import type { CliContext } from '../context.js';
import { writeRowsAction } from './write-rows.js';

/** Registers `write`. */
export function registerWrite(ctx: CliContext): void {
  ctx.program
    .command('write')
    .description('write rows (one commit per call); a JSONL row may carry "_kind": "-D" to delete')
    .argument('<table>', 'DB.TABLE')
    .argument('[file]', 'input file, or - for stdin (default)')
    .option('--format <format>', 'jsonl, csv or parquet (default: from the file name, else jsonl)')
    .option('--skip-invalid <file>', 'commit the valid rows and write the rejected ones, with reasons, to this file')
    .option(
      '--commit-identifier <id>',
      'idempotence key, unique in the table: a retried write with the same id commits nothing, from any process, however late',
    )
    .option('--commit-user <user>', 'who commits, recorded in the snapshot (default: a random writer-<uuid>)')
    .option(
      '--overwrite',
      'replace instead of upsert (one OVERWRITE snapshot): the partitions the rows go to, or the whole table (see --dynamic-partition-overwrite)',
    )
    .option(
      '--dynamic-partition-overwrite <bool>',
      'with --overwrite: true replaces only the partitions written to, false the whole table (default: the table option, true as in Paimon)',
    )
    .action(writeRowsAction(ctx, false));
}
