/** The options every data and changelog file of a table is written with (lib/format/data-file.ts). */
import type { WriteDataFileOptions } from '../format/data-file.js';
import type { Table } from './table.js';

/**
 * How every data and changelog file of `table` is encoded (writes, compactions, changelogs,
 * rescales): its codec, its `parquet.*` writer options, the footer metadata naming its schema, and
 * the first key column its rows ascend by. Writers add their row group size.
 */
export function dataFileOptions(table: Table): WriteDataFileOptions {
  return {
    compression: table.options.fileCompression,
    metadata: { 'varve.schema-id': String(table.schema.id), 'varve.table': table.name },
    sortedBy: table.keyFields[0]?.name,
    parquet: table.options.parquetWriter(),
  };
}
