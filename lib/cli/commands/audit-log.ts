/** `varve audit-log`: rows with their row kind, at a snapshot or between two. */
import { InvalidArgumentError } from '../../errors.js';
import type { IncrementalMode } from '../../table/audit-log.js';
import type { Table } from '../../table/table.js';
import type { CliContext } from '../context.js';
import { renderRecords } from '../output.js';
import { addSnapshotFlags, outputFormat, parseTimestamp, snapshotSpecOf, type SnapshotFlags } from '../parse-flags.js';

interface AuditLogFlags extends SnapshotFlags {
  incrementalBetween?: string;
  incrementalBetweenTimestamp?: string;
  mode?: string;
  where?: string;
  format?: string;
}

/** Registers `audit-log`. */
export function registerAuditLog({ program, catalog, out }: CliContext): void {
  addSnapshotFlags(program.command('audit-log'), 'at')
    .description('rows with their row kind (+I, -U, +U, -D), at a snapshot or between two')
    .argument('<table>', 'DB.TABLE')
    .option(
      '--incremental-between <a,b>',
      'changes after snapshot A up to snapshot B; each a snapshot id or a tag name (default: the table option incremental-between)',
    )
    .option(
      '--incremental-between-timestamp <t1,t2>',
      'changes committed after time T1 up to T2 (ISO-8601 or epoch ms)',
    )
    .option(
      '--mode <mode>',
      'delta (merged new files) or changelog (changelog files); default: the table option incremental-between-scan-mode (auto: changelog when the table has a changelog producer), else delta',
    )
    .option('--where <predicate>', 'only rows matching a predicate')
    .option('--format <format>', 'table, jsonl or csv', 'table')
    .action(async (name: string, o: AuditLogFlags) => {
      const { readAuditLog } = await import('../../table/audit-log.js');
      const { SEQUENCE_COLUMN } = await import('../../schema/types.js');
      const { displayRecords } = await import('../display.js');
      const table = await catalog().getTable(name);
      const spec = snapshotSpecOf(o);
      const range = await rangeOf(table, o, Object.keys(spec).length > 0);
      const result = await readAuditLog(table, {
        ...spec,
        incrementalBetween: range,
        mode: modeOf(table, o.mode),
        where: o.where,
      });
      const shown = result.schema.fields.map((f) => f.name).filter((n) => n !== SEQUENCE_COLUMN);
      const { columns, records } = displayRecords(result.select(shown), table.schema.fields);
      out(renderRecords(columns, records, outputFormat(o.format)));
    });
}

/** The range the flags give, else (with no snapshot flag) the table option `incremental-between`; undefined: at a snapshot. */
async function rangeOf(
  table: Table,
  o: AuditLogFlags,
  atSnapshot: boolean,
): Promise<{ from: number; to: number } | undefined> {
  const given = [
    o.incrementalBetween !== undefined && '--incremental-between',
    o.incrementalBetweenTimestamp !== undefined && '--incremental-between-timestamp',
    atSnapshot && 'a snapshot flag',
  ].filter(Boolean);
  if (given.length > 1) throw new InvalidArgumentError(`give one of ${given.join(', ')}: each says what to read`);
  const { resolveIncrementalBetween, resolveIncrementalBetweenTimestamp } = await import('../../table/audit-log.js');
  if (o.incrementalBetween !== undefined) return resolveIncrementalBetween(table, o.incrementalBetween);
  if (o.incrementalBetweenTimestamp !== undefined) {
    const ends = o.incrementalBetweenTimestamp.split(',');
    if (ends.length !== 2)
      throw new InvalidArgumentError(
        `--incremental-between-timestamp must be two times "T1,T2", got "${o.incrementalBetweenTimestamp}"`,
      );
    return resolveIncrementalBetweenTimestamp(table, parseTimestamp(ends[0].trim()), parseTimestamp(ends[1].trim()));
  }
  const option = table.options.get('incremental-between') as string[] | undefined;
  return option !== undefined && option.length > 0 && !atSnapshot
    ? resolveIncrementalBetween(table, option.join(','))
    : undefined;
}

/** `--mode`, else the table option incremental-between-scan-mode (auto: changelog when a changelog producer writes one). */
function modeOf(table: Table, flag: string | undefined): IncrementalMode {
  if (flag !== undefined && flag !== 'delta' && flag !== 'changelog')
    throw new InvalidArgumentError(`--mode must be delta or changelog, got "${flag}"`);
  if (flag !== undefined) return flag;
  const option = table.options.get('incremental-between-scan-mode') as 'auto' | IncrementalMode;
  if (option !== 'auto') return option;
  return table.options.changelogProducer === 'none' ? 'delta' : 'changelog';
}
