/** `varve demo`: the whole system in one minute on the warehouse (lib/cli/demo.ts is the script). */
import type { CliContext } from '../context.js';

/** Registers `demo`. */
export function registerDemo({ program, catalog, out }: CliContext): void {
  program
    .command('demo')
    .description(
      'the whole system in one minute: a streaming table, a consumer, updates, compaction, deletes, restart, expiry',
    )
    .option('--table <name>', 'demo table (dropped first when it exists)', 'demo.orders')
    .action(async (o: { table: string }) => {
      const { runDemo } = await import('../demo.js');
      await runDemo(catalog(), o.table, out);
    });
}
