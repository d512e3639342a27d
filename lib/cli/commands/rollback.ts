/** `varve rollback`: go back to a snapshot or tag. */
import { InvalidArgumentError } from '../../errors.js';
import { rollbackTo, type RollbackResult } from '../../maintenance/rollback.js';
import type { CliContext } from '../context.js';
import { parseNonNegativeInt } from '../parse-flags.js';

/** Registers `rollback`. */
export function registerRollback({ program, catalog, out }: CliContext): void {
  program
    .command('rollback')
    .description('go back to a snapshot or tag: newer snapshots and tags are removed with the files only they used, consumers past it move back')
    .argument('<table>', 'DB.TABLE')
    .option('--to-snapshot <id>', 'the snapshot to go back to')
    .option('--to-tag <name>', 'the tag to go back to (its snapshot is written back if it has expired)')
    .action(async (name: string, o: { toSnapshot?: string; toTag?: string }) => {
      if ((o.toSnapshot === undefined) === (o.toTag === undefined)) {
        throw new InvalidArgumentError('rollback needs exactly one of --to-snapshot N or --to-tag NAME');
      }
      const table = await catalog().getTable(name);
      const target = o.toTag !== undefined ? { tag: o.toTag } : { snapshotId: parseNonNegativeInt('--to-snapshot', o.toSnapshot!) };
      out(rollbackSummary(table.name, await rollbackTo(table, target), o.toTag));
    });
}

/** What a rollback removed and moved, one line each. */
function rollbackSummary(table: string, r: RollbackResult, tag: string | undefined): string {
  const removed = r.removedSnapshots.length ? `removed snapshots ${[...r.removedSnapshots].sort((a, b) => a - b).join(', ')}` : 'no newer snapshot to remove';
  const lines = [`rolled back ${table} to snapshot ${r.target}${r.restoredFromTag ? ` (written back from tag ${tag})` : ''}: ${removed}`];
  if (r.removedTags.length) lines.push(`removed tags ${r.removedTags.join(', ')}`);
  for (const c of r.resetConsumers) lines.push(`consumer ${c.id} moved back from snapshot ${c.from} to ${c.to}`);
  const d = r.deleted;
  lines.push(`deleted ${d.dataFiles} data files, ${d.changelogFiles} changelog files, ${d.manifests} manifests, ${d.manifestLists} manifest lists`);
  return lines.join('\n') + '\n';
}
