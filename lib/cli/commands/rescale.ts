/** `varve rescale`: rewrite the data into a new number of buckets. */
import { InvalidArgumentError } from '../../errors.js';
import type { CliContext } from '../context.js';

/** Registers `rescale`. */
export function registerRescale({ program, catalog, out }: CliContext): void {
  program
    .command('rescale')
    .description(
      "rewrite the data into a new number of buckets (one OVERWRITE snapshot); without --partition the table's bucket option changes too",
    )
    .argument('<table>', 'DB.TABLE')
    .requiredOption('--buckets <n>', 'the new bucket count')
    .option('--partition <spec>', 'only the partitions matching k=v[,k=v]; others keep their bucket count')
    .option('--force', 'rescale although a streaming consumer has not caught up (streams skip the OVERWRITE)')
    .action(async (name: string, o: { buckets: string; partition?: string; force?: boolean }) => {
      const buckets = Number(o.buckets);
      if (!/^\d+$/.test(o.buckets.trim()) || buckets < 1)
        throw new InvalidArgumentError(`--buckets must be an integer ≥ 1, got "${o.buckets}"`);
      const { parsePartitionSpec } = await import('../../schema/partition.js');
      const table = await catalog().getTable(name);
      const r = await table.rescale({
        buckets,
        partition: o.partition === undefined ? undefined : parsePartitionSpec(o.partition),
        force: Boolean(o.force),
      });
      const what = (p: string) => (p === '' ? 'the table' : p);
      const lines: string[] = [];
      if (r.optionChanged) lines.push(`bucket = ${buckets}: new partitions get ${buckets} buckets`);
      if (r.snapshot)
        lines.push(
          `rescaled ${r.partitions.map(what).join(', ')} to ${buckets} buckets: ${r.rows} rows, ${r.filesRemoved} files replaced by ${r.filesAdded}, snapshot ${r.snapshot.id} (OVERWRITE)`,
        );
      if (r.unchanged.length) lines.push(`already ${buckets} buckets: ${r.unchanged.map(what).join(', ')}`);
      if (lines.length === 0) lines.push('nothing to rescale: the table has no data');
      out(lines.join('\n') + '\n');
    });
}
