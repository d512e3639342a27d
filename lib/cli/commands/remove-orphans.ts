/** `varve remove-orphans`: delete files nothing references, older than a safety window. */
import { InvalidArgumentError } from '../../errors.js';
import type { RemoveOrphansResult } from '../../maintenance/remove-orphans.js';
import type { CliContext } from '../context.js';
import { formatSize } from '../output.js';
import { parseDurationFlag } from '../parse-flags.js';

interface RemoveOrphansFlags {
  olderThan?: string;
  dryRun?: boolean;
  maxKeys?: string;
  journal?: boolean;
}

/** Registers `remove-orphans`. */
export function registerRemoveOrphans({ program, catalog, out }: CliContext): void {
  program
    .command('remove-orphans')
    .description(
      'delete files no snapshot, tag or consumer references (left by crashed commits), older than a safety window',
    )
    .argument('<table>', 'DB.TABLE')
    .option(
      '--older-than <duration>',
      'only files older than this, e.g. 1 d, 6 h (default: orphan-files.older-than, 1 d)',
    )
    .option('--dry-run', 'list the files that would be deleted, delete nothing')
    .option(
      '--max-keys <n>',
      'list at most n keys, resuming after the last key the previous bounded run listed (the scheduled scan on AWS does the same); default: the whole table at once',
    )
    .option(
      '--journal',
      'look only at the files of expired pending registrations (what the 15-minute expiry run on AWS does); no listing of the table',
    )
    .action(async (name: string, o: RemoveOrphansFlags) => {
      if (o.maxKeys !== undefined && o.journal)
        throw new InvalidArgumentError('--max-keys and --journal are two different modes: give one of them');
      let maxKeys: number | undefined;
      if (o.maxKeys !== undefined) {
        maxKeys = Number(o.maxKeys);
        if (!Number.isInteger(maxKeys) || maxKeys < 1)
          throw new InvalidArgumentError(`--max-keys must be a whole number of 1 or more, got '${o.maxKeys}'`);
      }
      const { removeOrphanFiles } = await import('../../maintenance/remove-orphans.js');
      const table = await catalog().getTable(name);
      const result = await removeOrphanFiles(table, {
        olderThanMs: o.olderThan !== undefined ? parseDurationFlag('--older-than', o.olderThan) : undefined,
        dryRun: Boolean(o.dryRun),
        mode: o.journal ? 'journal' : maxKeys !== undefined ? 'scan' : 'full',
        maxKeys,
      });
      out(formatOrphanSummary(table.name, result));
    });
}

/** `90000` → `1.5 min`: the largest unit that keeps the number readable. */
function formatDuration(ms: number): string {
  const units: Array<[number, string]> = [
    [86_400_000, 'd'],
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1000, 's'],
  ];
  for (const [size, unit] of units) if (ms >= size) return `${+(ms / size).toFixed(1)} ${unit}`;
  return `${ms} ms`;
}

/** The summary of an orphan cleanup: one line, then with a dry run one line per file. */
function formatOrphanSummary(table: string, r: RemoveOrphansResult): string {
  const verb = r.dryRun ? 'would remove' : 'removed';
  const recent = r.tooRecent > 0 ? `; ${r.tooRecent} newer unreferenced files left alone` : '';
  let scope = '';
  if (r.mode === 'journal') scope = `; looked at ${r.listed} files of expired pending registrations`;
  else if (r.mode === 'scan') {
    scope = r.cycleComplete
      ? `; listed ${r.listed} keys, the scan reached the end of the table (${r.cycleListed} keys this cycle)`
      : `; listed ${r.listed} keys, run again to resume after ${r.resumeAfter}`;
  }
  let text = `${table}: ${verb} ${r.orphans.length} orphan files (${formatSize(r.bytes)}) older than ${formatDuration(r.olderThanMs)}${recent}${scope}\n`;
  if (r.dryRun) {
    for (const o of r.orphans)
      text += `  ${o.kind}\t${o.key}\t${formatSize(o.size)}\t${new Date(o.lastModified).toISOString()}\n`;
  }
  return text;
}
