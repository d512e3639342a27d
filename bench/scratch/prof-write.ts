import { mkdtempSync } from 'node:fs';
import { makeRows, shuffled } from '../lib/data';
import { createBenchTable } from '../lib/tables';
import { profiled, topFiles, topFrames } from '../lib/profile';
import { rawParquetBytes } from '../lib/raw-parquet';
const n = 1_000_000;
const input = makeRows(shuffled(n, 11), 0);
const what = process.argv[2] ?? 'write';
async function once() {
  const table = await createBenchTable(mkdtempSync('/tmp/vb-prof-'));
  const w = table.newWriter();
  await w.writeArrow(input);
  await w.commit();
  await w.close();
}
if (what === 'write') {
  await once();
  const t0 = performance.now();
  const { profile } = await profiled(async () => { await once(); await once(); });
  console.log('profiled ms', performance.now() - t0);
  for (const f of topFrames(profile, 30)) console.log((f.share * 100).toFixed(1).padStart(5), '%', f.ms.toFixed(0).padStart(6), 'ms', f.frame);
  for (const f of topFiles(profile, 15)) console.log((f.share * 100).toFixed(1).padStart(5), '%', f.ms.toFixed(0).padStart(6), 'ms', f.file);
} else {
  rawParquetBytes(input);
  const { profile } = await profiled(async () => { rawParquetBytes(input); rawParquetBytes(input); });
  for (const f of topFrames(profile, 15)) console.log((f.share * 100).toFixed(1).padStart(5), '%', f.ms.toFixed(0).padStart(6), 'ms', f.frame);
}
