/**
 * Child process of benchmark 1's memory measurement: streams `rows` generated rows in chunks of
 * 100k into a 4-bucket table with the given write-buffer-size (or, as the floor, only generates
 * them), commits, checks the snapshot, and prints {"maxRssMB", "ms", ...} as its last line.
 *   node --import tsx bench/suites/write-rss-child.ts <varve|floor> <rows> <bufferMB> <dir>
 */
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { LocalStore } from '../../lib/store/local-store.js';
import { BENCH_SCHEMA_TEXT, makeRows, shuffled } from '../lib/data.js';
import { assertEqual } from '../lib/checksum.js';

const [mode, rowsArg, bufferArg, dir] = process.argv.slice(2);
const rows = Number(rowsArg);
const CHUNK = 100_000;

async function main(): Promise<void> {
  const order = shuffled(rows, 7);
  const t0 = performance.now();
  let extra: Record<string, number> = {};
  if (mode === 'floor') {
    let n = 0;
    for (let from = 0; from < rows; from += CHUNK) n += makeRows(order.subarray(from, from + CHUNK), 0).numRows;
    assertEqual('rss floor: rows generated', n, rows);
  } else {
    const table = await new FolderCatalog(new LocalStore(dir)).createTable('bench.rss', {
      fields: parseSchemaText(BENCH_SCHEMA_TEXT),
      primaryKeys: ['key'],
      options: { bucket: '4', 'write-only': 'true', 'write-buffer-size': `${bufferArg} mb` },
    });
    const writer = table.newWriter();
    for (let from = 0; from < rows; from += CHUNK)
      await writer.writeArrow(makeRows(order.subarray(from, from + CHUNK), 0));
    const result = await writer.commit('rss');
    await writer.close();
    assertEqual('rss: committed rows', result.snapshot?.totalRecordCount, rows);
    const files = await readLiveFiles(table.store, table.path, result.snapshot!);
    assertEqual(
      'rss: rows in live files',
      files.reduce((n, e) => n + e.file.rowCount, 0),
      rows,
    );
    extra = { files: files.length };
  }
  const ms = performance.now() - t0;
  console.log(JSON.stringify({ maxRssMB: process.resourceUsage().maxRSS / 1024, ms, ...extra }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
