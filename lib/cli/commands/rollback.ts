/** `varve rollback`: a new snapshot holding the files of an earlier snapshot or tag again. */
import { InvalidArgumentError } from '../../errors.js';
import type { RollbackResult } from '../../maintenance/rollback.js';
import type { CliContext } from '../context.js';
import { parseNonNegativeInt } from '../parse-flags.js';

/** Registers `rollback`. */
export function registerRollback({ program, catalog, out, status }: CliContext): void {
  program
    .command('rollback')
    .description(
      'go back to a snapshot or tag: one new OVERWRITE snapshot holding its files again; the undone snapshots stay in the history until they expire',
    )
    .argument('<table>', 'DB.TABLE')
    .option('--to-snapshot <id>', 'the snapshot to go back to')
    .option('--to-tag <name>', 'the tag to go back to (also when its snapshot has expired)')
    .action(async (name: string, o: { toSnapshot?: string; toTag?: string }) => {
      if ((o.toSnapshot === undefined) === (o.toTag === undefined)) {
        throw new InvalidArgumentError('rollback needs exactly one of --to-snapshot N or --to-tag NAME');
      }
      const { rollbackTo } = await import('../../maintenance/rollback.js');
      const table = await catalog().getTable(name);
      const target =
        o.toTag !== undefined ? { tag: o.toTag } : { snapshotId: parseNonNegativeInt('--to-snapshot', o.toSnapshot!) };
      const r = await rollbackTo(table, target);
      if (r.legacy !== undefined) status(`varve: ${r.legacy}\n`);
      out(rollbackSummary(table.name, r, o.toTag));
      if (r.hookError !== undefined)
        status(`varve: the rollback landed, but the work after the commit failed: ${r.hookError.message}\n`);
    });
}

/** What a rollback committed and undid, one line each. */
function rollbackSummary(table: string, r: RollbackResult, tag: string | undefined): string {
  const to = `snapshot ${r.target}${tag !== undefined ? ` (tag ${tag})` : ''}`;
  if (r.snapshot === undefined) return `${table} already holds the files of ${to}: nothing to roll back\n`;
  const undone =
    r.undone === undefined
      ? 'undid no snapshot'
      : r.undone.from === r.undone.to
        ? `undid snapshot ${r.undone.from}`
        : `undid snapshots ${r.undone.from}..${r.undone.to}`;
  const lines = [`rolled back ${table} to ${to} as snapshot ${r.snapshot.id} (OVERWRITE): ${undone}`];
  lines.push(
    `removed ${r.removedFiles} files from the live set, restored ${r.restoredFiles}; the undone snapshots stay in the history until they expire`,
  );
  if (r.tagsOnUndone.length) lines.push(`tags on undone snapshots (kept): ${r.tagsOnUndone.join(', ')}`);
  for (const c of r.consumersPastTarget) {
    lines.push(
      `consumer ${c.id} (next snapshot ${c.nextSnapshot}) has read undone snapshots: rows it received are not retracted; streams skip the rollback snapshot with an overwrite-skipped event`,
    );
  }
  return lines.join('\n') + '\n';
}
