/** `varve tables`: the tables of the warehouse. */
import type { CliContext } from '../context.js';

/** Registers `tables`. */
export function registerTables({ program, catalog, out }: CliContext): void {
  program
    .command('tables')
    .description('list the tables of the warehouse')
    .option('--database <db>', 'only this database')
    .action(async (o: { database?: string }) => {
      const c = catalog();
      const names = await c.listTables(o.database);
      // The location is named: a mistyped --warehouse folder is created empty (as mkdir -p), and shows here.
      out(
        names.length ? names.join('\n') + '\n' : `no tables yet in ${c.store.uri}; create one with \`varve create\`\n`,
      );
    });
}
