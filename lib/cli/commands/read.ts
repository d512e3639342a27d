/** `varve read`: the merged rows of a table, printed as they are read. */
import { InvalidArgumentError } from '../../errors.js';
import type { ReadExplain } from '../../table/read-pruning.js';
import type { Table } from '../../table/table.js';
import type { CliContext } from '../context.js';
import { RecordPrinter } from '../output.js';
import {
  addSnapshotFlags,
  list,
  outputFormat,
  parseNonNegativeInt,
  snapshotSpecOf,
  type SnapshotFlags,
} from '../parse-flags.js';

/** Rows per printed batch: the most row objects that exist at a time. */
const PRINT_SLICE_ROWS = 8192;

interface ReadFlags extends SnapshotFlags {
  columns?: string;
  partition?: string;
  where?: string;
  limit?: string;
  explain?: boolean;
  format?: string;
}

/** Registers `read`. */
export function registerRead({ program, catalog, out }: CliContext): void {
  addSnapshotFlags(program.command('read'), 'read')
    .description('read the merged rows of a table, at the latest snapshot or back in time')
    .argument('<table>', 'DB.TABLE')
    .option('--columns <cols>', 'columns to print, comma separated')
    .option('--partition <spec>', 'only this partition, e.g. dt=2024-01-01,region=eu')
    .option(
      '--where <predicate>',
      `only rows matching a predicate, e.g. "amount >= 10 AND status IN ('paid', 'new')" (= != < <= > >= IN, IS [NOT] NULL, AND, OR, NOT)`,
    )
    .option('--limit <n>', 'at most this many rows')
    .option('--explain', 'print what the read pruned (partitions, file key ranges) and read, instead of the rows')
    .option('--format <format>', 'table, jsonl or csv', 'table')
    .action(async (name: string, o: ReadFlags) => {
      const arrow = await import('apache-arrow');
      const { parsePartitionSpec } = await import('../../schema/partition.js');
      const { displayRecords } = await import('../display.js');
      const table = await catalog().getTable(name);
      refuseIncrementalOption(table, 'read');
      const format = outputFormat(o.format);
      let explained: ReadExplain | undefined;
      const batches = table.scan({
        ...snapshotSpecOf(o),
        columns: o.columns ? list(o.columns) : undefined,
        partition: o.partition ? parsePartitionSpec(o.partition) : undefined,
        where: o.where,
        limit: o.limit !== undefined ? parseNonNegativeInt('--limit', o.limit) : undefined,
        explain: o.explain ? (e) => (explained = e) : undefined,
        batchRows: PRINT_SLICE_ROWS,
        // Each batch is turned into display records before the next is asked for.
        reuseBuffers: true,
      });
      // Prints as it reads: memory holds a batch of rows, not the table.
      let printer: RecordPrinter | undefined;
      for await (const batch of batches) {
        if (o.explain) continue;
        const { columns, records } = displayRecords(new arrow.Table(batch), table.schema.fields);
        printer ??= new RecordPrinter(columns, format, out);
        printer.add(records);
      }
      if (explained) {
        out((await explainText(explained, table)) + '\n');
        return;
      }
      printer?.end();
    });
}

/**
 * Refuses a state read of a table whose option incremental-between is set: in Paimon the option
 * turns a batch read into a read of those changes, so reading the state instead would silently
 * answer another question. The changes are audit-log's (which uses the option).
 */
export function refuseIncrementalOption(table: Table, command: string): void {
  const range = table.options.get('incremental-between') as string[] | undefined;
  if (range === undefined || range.length === 0) return;
  throw new InvalidArgumentError(
    `${table.name} has the option incremental-between=${range.join(',')}, which makes a batch read a read of the changes between those snapshots: ` +
      `read them with varve audit-log ${table.name} (it uses the option); to ${command} the table's state, reset it first: varve alter ${table.name} --reset incremental-between`,
  );
}

/** The `read --explain` report. */
async function explainText(e: ReadExplain, table: Table): Promise<string> {
  const { formatPredicate } = await import('../../table/predicate.js');
  const types = new Map(table.schema.fields.map((f) => [f.name, f.type]));
  return [
    `snapshot            ${e.snapshotId ?? 'none (empty table)'} (schema ${e.schemaId})`,
    `predicate           ${e.predicate ? formatPredicate(e.predicate, types) : '(none)'}`,
    `live files          ${e.liveFiles}`,
    `skipped: partition  ${e.skippedByPartition}`,
    `skipped: bucket     ${e.skippedByBucket}`,
    `skipped: key range  ${e.skippedByKeyRange}`,
    `skipped: value stats ${e.skippedByValueStats} (append tables: column min/max/nulls)`,
    `files read          ${e.filesRead}`,
    `row groups          ${e.rowGroups ? `${e.rowGroups.read} read (${e.rowGroups.rowsRead} rows of them decoded), skipped ${e.rowGroups.skippedByStats} by key statistics and ${e.rowGroups.skippedByKeys} by decoded keys` : 'all read (no key range)'}`,
    `rows merged         ${e.mergedRows}`,
    `rows matching       ${e.matchingRows} (predicate applied after the merge)`,
  ].join('\n');
}
