/** `varve delete`: the rows whose primary keys are given, or (--where) the rows matching a predicate. */
import type { CliContext } from '../context.js';
import { writeRowsAction } from './write-rows.js';

/** Registers `delete`. */
export function registerDelete(ctx: CliContext): void {
  ctx.program
    .command('delete')
    .description('delete the rows whose primary keys are given, or (--where) the rows matching a predicate')
    .option(
      '--where <predicate>',
      `delete the rows matching a predicate, e.g. "status = 'cancelled'" (writes a -D per matching key; an append table's files are rewritten without the rows)`,
    )
    .argument('<table>', 'DB.TABLE')
    .argument('[file]', 'input file with the keys, or - for stdin (default)')
    .option('--format <format>', 'jsonl, csv or parquet')
    .option('--skip-invalid <file>', 'delete the valid keys and write the rejected ones to this file')
    .option('--commit-identifier <id>', 'idempotence key, unique in the table')
    .option('--commit-user <user>', 'who commits, recorded in the snapshot')
    .action(writeRowsAction(ctx, true));
}
