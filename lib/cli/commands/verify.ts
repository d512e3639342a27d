/** `varve verify`: every snapshot's and tag's files exist and read back (exit 1 when not). */
import { CorruptMetadataError } from '../../errors.js';
import type { TableVerification } from '../../maintenance/verify-table.js';
import type { CliContext } from '../context.js';

/** Registers `verify`. */
export function registerVerify({ program, catalog, out }: CliContext): void {
  program
    .command('verify')
    .description(
      'check that every snapshot and tag of a table references only files that exist, and read every live file back against its checksums (exit 1 when not)',
    )
    .argument('<table>', 'DB.TABLE')
    .option('--quick', 'only check that every referenced file exists; read nothing back')
    .action(async (name: string, o: { quick?: boolean }) => {
      const { verifyTable } = await import('../../maintenance/verify-table.js');
      const table = await catalog().getTable(name);
      const result = await verifyTable(table, { quick: o.quick === true });
      out(formatVerification(table.name, result));
      // The problems are printed above; the error makes the exit code say so.
      if (!result.ok)
        throw new CorruptMetadataError(
          `${table.name} has ${result.problems.length} problem(s), listed above; restore the missing or damaged files, or roll back to a snapshot that verifies`,
        );
    });
}

/** The `varve verify` report. */
function formatVerification(table: string, r: TableVerification): string {
  const readBack =
    r.readBack > 0
      ? `, ${r.readBack} file(s) read back${r.unchecked.length ? ` (${r.unchecked.length} unchecked: written before checksums)` : ''}`
      : '';
  const head = `${table}: ${r.snapshots.length} snapshot(s)${r.tags.length ? `, ${r.tags.length} tag(s)` : ''}, ${r.checkedReferences} reference(s) checked${readBack}: `;
  const unchecked = r.unchecked.map((k) => `  unchecked (no checksums, written before them): ${k}\n`).join('');
  if (r.ok) return `${head}ok\n${unchecked}`;
  return (
    `${head}${r.problems.length} problem(s)\n` +
    r.problems
      .map((p) => `  ${p.owner}: ${p.problem}${p.key && !p.problem.includes(p.key) ? ` (${p.key})` : ''}\n`)
      .join('') +
    unchecked
  );
}
