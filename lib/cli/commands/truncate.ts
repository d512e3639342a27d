/** `varve truncate`: remove every row in one OVERWRITE snapshot. */
import type { CliContext } from '../context.js';

/** Registers `truncate`. */
export function registerTruncate({ program, catalog, out }: CliContext): void {
  program
    .command('truncate')
    .description('remove every row (one OVERWRITE snapshot; time travel still reads the old ones)')
    .argument('<table>', 'DB.TABLE')
    .action(async (name: string) => {
      const result = await (await catalog().getTable(name)).truncate();
      out(`truncated ${name}, snapshot ${result.snapshot?.id}\n`);
    });
}
