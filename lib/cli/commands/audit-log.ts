/** `varve audit-log`: rows with their row kind, at a snapshot or between two. */
import { InvalidArgumentError } from '../../errors.js';
import { SEQUENCE_COLUMN } from '../../schema/types.js';
import { parseIncrementalBetween, readAuditLog } from '../../table/audit-log.js';
import { displayRecords, type CliContext } from '../context.js';
import { renderRecords } from '../output.js';
import { addSnapshotFlags, outputFormat, snapshotSpecOf, type SnapshotFlags } from '../parse-flags.js';

interface AuditLogFlags extends SnapshotFlags {
  incrementalBetween?: string;
  mode: string;
  where?: string;
  format?: string;
}

/** Registers `audit-log`. */
export function registerAuditLog({ program, catalog, out }: CliContext): void {
  addSnapshotFlags(program.command('audit-log'), 'at')
    .description('rows with their row kind (+I, -U, +U, -D), at a snapshot or between two')
    .argument('<table>', 'DB.TABLE')
    .option('--incremental-between <a,b>', 'changes after snapshot A up to snapshot B')
    .option('--mode <mode>', 'delta (merged new files) or changelog (changelog files)', 'delta')
    .option('--where <predicate>', 'only rows matching a predicate')
    .option('--format <format>', 'table, jsonl or csv', 'table')
    .action(async (name: string, o: AuditLogFlags) => {
      const table = await catalog().getTable(name);
      if (o.mode !== 'delta' && o.mode !== 'changelog') throw new InvalidArgumentError(`--mode must be delta or changelog, got "${o.mode}"`);
      const result = await readAuditLog(table, {
        ...snapshotSpecOf(o),
        incrementalBetween: o.incrementalBetween ? parseIncrementalBetween(o.incrementalBetween) : undefined,
        mode: o.mode,
        where: o.where,
      });
      const shown = result.schema.fields.map((f) => f.name).filter((n) => n !== SEQUENCE_COLUMN);
      const { columns, records } = displayRecords(result.select(shown), table.schema.fields);
      out(renderRecords(columns, records, outputFormat(o.format)));
    });
}
