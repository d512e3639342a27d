/** `varve drop`: drop a table and delete its files. */
import type { CliContext } from '../context.js';

/** Registers `drop`. */
export function registerDrop({ program, catalog, out }: CliContext): void {
  program
    .command('drop')
    .description('drop a table and delete all of its files')
    .argument('<table>', 'DB.TABLE')
    .action(async (name: string) => {
      await catalog().dropTable(name);
      out(`dropped ${name}\n`);
    });
}
