import * as arrow from 'apache-arrow';
import { parquetMetadata, readOffsetIndex } from 'hyparquet';
import { Table as WasmTable, writeParquet, WriterPropertiesBuilder, Compression } from 'parquet-wasm';
const n = 200_000;
const ids = BigInt64Array.from({ length: n }, (_, i) => BigInt(i));
const s = Array.from({ length: n }, (_, i) => `name-${(i * 7919) % 50000}-${'x'.repeat(i % 13)}`);
const t = arrow.tableFromArrays({ id: ids, s });
function w(f: (b: WriterPropertiesBuilder) => WriterPropertiesBuilder, batch?: number) {
  const props = f(new WriterPropertiesBuilder().setCompression(Compression.ZSTD).setMaxRowGroupSize(131072).setDictionaryEnabled(false)).build();
  const tt = batch ? new arrow.Table(t.batches.flatMap(b => { const out = []; for (let i = 0; i < b.numRows; i += batch) out.push(b.slice(i, i + batch)); return out; })) : t;
  return writeParquet(WasmTable.fromIPCStream(arrow.tableToIPC(tt, 'stream')), props);
}
function pages(bytes: Uint8Array) {
  const ab = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  const md = parquetMetadata(ab);
  return md.row_groups[0].columns.map(c => { const oi = readOffsetIndex({ view: new DataView(ab, Number(c.offset_index_offset), c.offset_index_length!), offset: 0 } as any); return `${c.meta_data!.path_in_schema}:${oi.page_locations.length}p dict=${c.meta_data!.dictionary_page_offset !== undefined}`; }).join(' ') + ` rgs=${md.row_groups.length} size=${bytes.length}`;
}
const cases: [string, (b: WriterPropertiesBuilder) => WriterPropertiesBuilder, number?][] = [
  ['plain s, page 8k', (b) => b.setDataPageSizeLimit(8192)],
  ['dict s, page 8k', (b) => b.setColumnDictionaryEnabled('s', true).setDataPageSizeLimit(8192)],
  ['dict s, page 8k, batch 65536', (b) => b.setColumnDictionaryEnabled('s', true).setDataPageSizeLimit(8192), 65536],
  ['dict s, page 8k, wbs 512', (b) => b.setColumnDictionaryEnabled('s', true).setDataPageSizeLimit(8192).setWriteBatchSize(512)],
  ['rg bytes 256k, batch 8192', (b) => b.setMaxRowGroupBytes(256 * 1024), 8192],
  ['dict all', (b) => b.setDictionaryEnabled(true)],
];
for (const [name, f, batch] of cases) console.log(name.padEnd(32), pages(w(f, batch)));
