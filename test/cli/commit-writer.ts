/**
 * A writer OS process for the tail-kill test: commits two keys per commit to `<table>` of the
 * local warehouse `<warehouse>` until the file `<stop>` exists, and prints one JSON line per commit
 * (`{"i", "snapshot", "rows": [{k, v}]}`). Run with `node --import tsx test/cli/commit-writer.ts`.
 */
import { existsSync } from 'node:fs';
import { openCatalog } from '../../lib/catalog/open-catalog.js';

const [warehouse, name, stop, keysText] = process.argv.slice(2);
const keys = Number(keysText);
const table = await openCatalog(warehouse).getTable(name);
for (let i = 0; i < 2000 && !existsSync(stop); i++) {
  const ks = [...new Set([i % keys, (i * 7 + 3) % keys])];
  const rows = ks.map((k) => ({ k: BigInt(k), v: `c${i}k${k}` }));
  const r = await table.write(rows);
  process.stdout.write(
    `${JSON.stringify({ i, snapshot: r.snapshot!.id, rows: ks.map((k) => ({ k, v: `c${i}k${k}` })) })}\n`,
  );
  await new Promise((res) => setTimeout(res, 150));
}
