/**
 * A writer OS process for the rollback-under-writers test (rollback-race.ts): commits to `db.t`
 * of the local warehouse `<warehouse>` at least `<commits>` times and on until the file `<stop>`
 * exists, pausing 0–400 ms (seeded) between commits. Commit i writes key `w<writer>-<i>` (n = i)
 * and the shared key `last-w<writer>` (n = i); every other commit carries the identifier
 * `w<writer>-<i>` (the exactly-once path). It mostly stays warm (one table object, as a streaming
 * writer does) and reopens the table now and then (a cold writer). Prints one JSON line per
 * acknowledged commit: `{"writer", "i", "snapshot"}`. A conflict it retries is written to stderr
 * as `retried conflict: …`; anything else fails the process.
 * Run with `node --import tsx test/cli/rollback-writer.ts <warehouse> <writer> <commits> <seed> <stop>`.
 */
import { existsSync } from 'node:fs';
import { openCatalog } from '../../lib/catalog/open-catalog.js';
import { CommitConflictError } from '../../lib/errors.js';
import { rng } from '../helpers/random.js';

const [warehouse, writerText, commitsText, seedText, stop] = process.argv.slice(2);
const writer = Number(writerText);
const commits = Number(commitsText);
const r = rng(Number(seedText));
const catalog = openCatalog(warehouse);
let table = await catalog.getTable('db.t');
for (let i = 0; i < commits || !existsSync(stop); i++) {
  if (r.chance(0.2)) table = await catalog.getTable('db.t');
  const rows = [
    { id: `w${writer}-${i}`, writer, n: i },
    { id: `last-w${writer}`, writer, n: i },
  ];
  const opts = i % 2 === 1 ? { commitIdentifier: `w${writer}-${i}` } : {};
  for (;;) {
    try {
      const done = await table.write(rows, opts);
      if (done.alreadyCommitted)
        throw new Error(
          `commit ${i} was reported as committed before (snapshot ${done.snapshot?.id}) on its first call`,
        );
      if (done.compactionError !== undefined)
        process.stderr.write(`inline compaction failed after commit ${i}: ${done.compactionError.message}\n`);
      process.stdout.write(`${JSON.stringify({ writer, i, snapshot: done.snapshot!.id })}\n`);
      break;
    } catch (e) {
      if (!(e instanceof CommitConflictError)) throw e;
      process.stderr.write(`retried conflict: ${e.message}\n`);
    }
  }
  await new Promise((res) => setTimeout(res, r.int(0, 400)));
}
