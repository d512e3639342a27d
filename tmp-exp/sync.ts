import * as arrow from 'apache-arrow';
import { readParquet } from 'parquet-wasm';
import { rowsToTable } from '../lib/format/columns.js';
import { writeDataFile } from '../lib/format/data-file.js';
import { rowGroupFile, readParquetFooter } from '../lib/format/row-group-reader.js';
import { rng } from '../test/helpers/random.js';
import { allTypeFields, randomRows } from '../test/format/fixtures.js';
const FIELDS = allTypeFields();
(async () => {
  const r = rng(7);
  const rows = randomRows(r, FIELDS, 500);
  const good = writeDataFile(rowsToTable(FIELDS, rows, { sequence: rows.map((_, i) => i), kind: rows.map(() => 0) }), { compression: 'zstd', rowGroupSize: 200 });
  const t = arrow.tableFromIPC(readParquet(good, { columns: [FIELDS[1].name] }).intoIPCStream());
  console.log('whole file, projection', t.schema.names.length, t.numRows);
  const src = { size: good.length, name: 'x', read: async (s: number, e: number) => good.subarray(s, e) };
  const footer = await readParquetFooter(src);
  const { file } = await rowGroupFile(footer, 1, new Set([FIELDS[1].name]), (s, e) => src.read(s, e));
  const whole = new Uint8Array(await (file.blob() as Blob).arrayBuffer());
  try { const t2 = arrow.tableFromIPC(readParquet(whole, { columns: [FIELDS[1].name] }).intoIPCStream()); console.log('rg file projection', t2.schema.names, t2.numRows); } catch (e) { console.log('ERR', (e as Error).message); }
})();
