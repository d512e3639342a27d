/** `varve tag`: create or delete a tag (a named snapshot kept by expiry). */
import { InvalidArgumentError } from '../../errors.js';
import type { CliContext } from '../context.js';

/** Registers `tag`. */
export function registerTag({ program, catalog, out }: CliContext): void {
  program
    .command('tag')
    .description('create or delete a tag (a named snapshot kept by expiry)')
    .argument('<table>', 'DB.TABLE')
    .argument('<action>', 'create or delete')
    .argument('<name>', 'tag name')
    .option('--snapshot <id>', 'snapshot to tag (default: latest)', Number)
    .action(async (name: string, action: string, tag: string, o: { snapshot?: number }) => {
      const { createTag, deleteTag } = await import('../../snapshot/tags.js');
      const table = await catalog().getTable(name);
      if (action === 'create') {
        const snapshot = await table.snapshotFor({ snapshotId: o.snapshot });
        if (!snapshot) throw new InvalidArgumentError(`${table.name} has no snapshot to tag yet; write to it first`);
        await createTag(table.store, table.path, tag, snapshot);
        out(`tag ${tag} -> snapshot ${snapshot.id}\n`);
      } else if (action === 'delete') {
        await deleteTag(table.store, table.path, tag);
        out(`deleted tag ${tag}\n`);
      } else {
        throw new InvalidArgumentError(`tag action must be create or delete, got "${action}"`);
      }
    });
}
