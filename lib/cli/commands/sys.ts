/** `varve sys`: the system tables of a table (snapshots, files, consumers, …). */
import { SYSTEM_TABLES } from '../../table/system-table-names.js';
import type { CliContext } from '../context.js';
import { renderRecords } from '../output.js';
import { outputFormat } from '../parse-flags.js';

/** Registers `sys`. */
export function registerSys({ program, catalog, out }: CliContext): void {
  program
    .command('sys')
    .description(`system tables: ${[...SYSTEM_TABLES, 'iceberg'].join(', ')}`)
    .argument('<table>', 'DB.TABLE')
    .argument('<name>', [...SYSTEM_TABLES, 'iceberg'].join('|'))
    .option('--snapshot <id>', 'for files, manifests, buckets, partitions and statistics: at this snapshot', Number)
    .option('--format <format>', 'table, jsonl or csv', 'table')
    .action(async (name: string, sys: string, o: { snapshot?: number; format?: string }) => {
      const { icebergSystemTable } = await import('../../iceberg/iceberg-status.js');
      const { readSystemTable } = await import('../../table/system-tables.js');
      const table = await catalog().getTable(name);
      // `iceberg` lives above the table layer (lib/iceberg), so it is dispatched here.
      const { columns, records } =
        sys === 'iceberg'
          ? await icebergSystemTable(table)
          : await readSystemTable(table, sys, { snapshotId: o.snapshot });
      out(renderRecords(columns, records, outputFormat(o.format)));
    });
}
