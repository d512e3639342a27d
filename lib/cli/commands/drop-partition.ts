/** `varve drop-partition`: remove the partitions matching a spec in one OVERWRITE snapshot. */
import type { CliContext } from '../context.js';

/** Registers `drop-partition`. */
export function registerDropPartition({ program, catalog, out }: CliContext): void {
  program
    .command('drop-partition')
    .description('remove the partitions matching k=v[,k=v] (one OVERWRITE snapshot)')
    .argument('<table>', 'DB.TABLE')
    .argument(
      '<partition>',
      'e.g. dt=2024-05-01 or dt=2024-05-01,region=eu (a partial spec drops every partition under it)',
    )
    .action(async (name: string, spec: string) => {
      const { parsePartitionSpec } = await import('../../schema/partition.js');
      const result = await (await catalog().getTable(name)).dropPartition(parsePartitionSpec(spec));
      out(`dropped partition ${spec} of ${name}, snapshot ${result.snapshot?.id}\n`);
    });
}
