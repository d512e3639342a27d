/** `varve count`: the merged rows of a table, counted. */
import type { CliContext } from '../context.js';
import { refuseIncrementalOption } from './read.js';
import { addSnapshotFlags, snapshotSpecOf, type SnapshotFlags } from '../parse-flags.js';

/** Registers `count`. */
export function registerCount({ program, catalog, out }: CliContext): void {
  addSnapshotFlags(program.command('count'), 'count at')
    .description('count the merged rows of a table (optionally only those matching --where)')
    .argument('<table>', 'DB.TABLE')
    .option('--where <predicate>', 'only rows matching a predicate')
    .action(async (name: string, o: SnapshotFlags & { where?: string }) => {
      const table = await catalog().getTable(name);
      refuseIncrementalOption(table, 'count');
      out(`${await table.count({ ...snapshotSpecOf(o), where: o.where })}\n`);
    });
}
