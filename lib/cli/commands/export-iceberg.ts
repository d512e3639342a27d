/**
 * `varve export-iceberg <table>`: writes the table's Iceberg metadata now (normally it follows
 * every commit that changes the highest level); a no-op when the export is current.
 */
import { InvalidArgumentError } from '../../errors.js';
import { exportIceberg } from '../../iceberg/export.js';
import type { CliContext } from '../context.js';
import { formatSize } from '../output.js';

/** Registers `export-iceberg`. */
export function registerExportIceberg({ program, catalog, out }: CliContext): void {
  program
    .command('export-iceberg')
    .description('write the Iceberg metadata of the latest snapshot now (metadata.iceberg.storage must be set)')
    .argument('<table>', 'DB.TABLE')
    .action(async (name: string) => {
      const table = await catalog().getTable(name);
      const r = await exportIceberg(table);
      switch (r.status) {
        case 'disabled':
          throw new InvalidArgumentError(
            `${name} does not export Iceberg metadata: create it with the option metadata.iceberg.storage=table-location (or warehouse)`,
          );
        case 'empty':
          out(`${name}: no snapshot yet, nothing to export\n`);
          return;
        case 'exported':
          out(`${name}: exported snapshot ${r.snapshotId} (${r.files!.exported} data files, ${r.records} records; ${r.writes} objects, ${formatSize(r.bytesWritten)} written) to ${r.metadataLocation}\n`);
          return;
        default:
          out(`${name}: the Iceberg metadata is current (snapshot ${r.snapshotId}) at ${r.metadataLocation}\n`);
      }
    });
}
