import { rowsToTable, tableToRows } from '../lib/format/columns.js';
import { readDataFileRanged, readDataFile, writeDataFile } from '../lib/format/data-file.js';
import { KIND_FIELD, SEQUENCE_FIELD } from '../lib/format/arrow-schema.js';
import { MemoryStore } from '../lib/store/memory-store.js';
import { rng } from '../test/helpers/random.js';
import { allTypeFields, randomRows } from '../test/format/fixtures.js';
const FIELDS = allTypeFields();
const WITH = [...FIELDS, SEQUENCE_FIELD, KIND_FIELD];
let uncaught = 0;
process.on('uncaughtException', (e) => { uncaught++; });
const J = (x: unknown) => JSON.stringify(x, (k, v) => typeof v === 'bigint' ? String(v) : v);
const sync = process.argv[2] === 'sync';
(async () => {
  const r = rng(7);
  const rows = randomRows(r, FIELDS, 500);
  const good = writeDataFile(rowsToTable(FIELDS, rows, { sequence: rows.map((_, i) => i), kind: rows.map(() => 0) }), { compression: 'zstd', rowGroupSize: 200 });
  const store = new MemoryStore();
  await store.put('good', good);
  const read = async (k: string, b: Uint8Array) => sync ? J(tableToRows(await readDataFile(b), WITH)) : J(tableToRows(await readDataFileRanged(store, k), WITH));
  const want = await read('good', good);
  const footerLen = new DataView(good.buffer, good.byteOffset + good.length - 8, 4).getUint32(0, true);
  const dataEnd = good.length - 8 - footerLen;
  const counts: Record<string, number> = {};
  for (let t = 0; t < 25; t++) {
    const bad = good.slice();
    const p = r.int(4, dataEnd - 1); bad[p] ^= 1 << r.int(0, 7);
    await store.put('bad', bad);
    const before = uncaught;
    let k: string;
    const res = await Promise.race([read('bad', bad).then((g) => g === want ? 'same' : 'WRONG', (e) => (e as Error).constructor.name + ':' + (e as Error).message.slice(0, 50)), new Promise<string>((res) => setTimeout(() => res("HANG"), 15000))]);
    k = uncaught > before ? 'UNCAUGHT+' + res : res;
    counts[k] = (counts[k] ?? 0) + 1;
    const g = await Promise.race([read('good', good).then((g) => g === want ? 'ok' : 'GOODWRONG', (e) => 'GOODFAIL:' + (e as Error).message.slice(0, 50)), new Promise<string>((res) => setTimeout(() => res("GOODHANG"), 15000))]);
    if (g !== 'ok') counts[g] = (counts[g] ?? 0) + 1;
  }
  console.log(counts);
  process.exit(0);
})();
