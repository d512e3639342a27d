/** `varve tables`: the tables of the warehouse. */
import type { CliContext } from '../context.js';

/** Registers `tables`. */
export function registerTables({ program, catalog, out }: CliContext): void {
  program
    .command('tables')
    .description('list the tables of the warehouse')
    .option('--database <db>', 'only this database')
    .action(async (o: { database?: string }) => {
      const names = await catalog().listTables(o.database);
      out(names.length ? names.join('\n') + '\n' : 'no tables yet; create one with `varve create`\n');
    });
}
