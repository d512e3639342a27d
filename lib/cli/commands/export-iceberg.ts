/**
 * `varve export-iceberg <table>`: writes the table's Iceberg metadata now (normally it follows
 * every commit that changes the highest level); a no-op when the latest snapshot is exported.
 * Either way it says what Iceberg readers still do not see (a primary-key table's files below the
 * highest level), never calling a stale view current.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { CliContext } from '../context.js';
import { formatSize } from '../output.js';

/** Registers `export-iceberg`. */
export function registerExportIceberg({ program, catalog, out }: CliContext): void {
  program
    .command('export-iceberg')
    .description('write the Iceberg metadata of the latest snapshot now (metadata.iceberg.storage must be set)')
    .argument('<table>', 'DB.TABLE')
    .action(async (name: string) => {
      const { exportIceberg } = await import('../../iceberg/export.js');
      const { icebergStatus, icebergViewGapText } = await import('../../iceberg/iceberg-status.js');
      const table = await catalog().getTable(name);
      const r = await exportIceberg(table);
      // Never call a stale view current: say what Iceberg readers still miss.
      const gap =
        r.status === 'disabled' || r.status === 'empty'
          ? undefined
          : icebergViewGapText(table, await icebergStatus(table));
      const note = gap === undefined ? '' : `${name}: ${gap}\n`;
      switch (r.status) {
        case 'disabled':
          throw new InvalidArgumentError(
            `${name} does not export Iceberg metadata: create it with the option metadata.iceberg.storage=table-location (or warehouse)`,
          );
        case 'empty':
          out(`${name}: no snapshot yet, nothing to export\n`);
          return;
        case 'exported':
          out(
            `${name}: exported snapshot ${r.snapshotId} (${r.files!.exported} data files, ${r.records} records; ${r.writes} objects, ${formatSize(r.bytesWritten)} written) to ${r.metadataLocation}\n${note}`,
          );
          return;
        default:
          out(
            `${name}: the Iceberg metadata already exports snapshot ${r.snapshotId}${r.status === 'newer-exported' ? ' (newer than the latest one read here)' : ''} at ${r.metadataLocation}\n${note}`,
          );
      }
    });
}
