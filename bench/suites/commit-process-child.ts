/**
 * Child process of benchmark 5's separate-process case: one OS process committing `commits`
 * batches of `rows` new rows to a shared table on a local folder, racing the other processes for
 * snapshot ids (each process has its own committer, so the races are real). Waits for `<dir>/go`
 * after writing `<dir>/ready-<index>`, so every process starts together; prints
 * {"doneMs", "commits", "gaveUp", "attempts", "lost"} as its last line.
 *   node --import tsx bench/suites/commit-process-child.ts <dir> <index> <commits> <rows>
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CommitRetriesExhaustedError } from '../../lib/errors.js';
import { LocalStore } from '../../lib/store/local-store.js';
import { sleep } from '../../lib/store/backoff.js';
import { makeRows, range } from '../lib/data.js';
import { CountingStore } from '../lib/counting-store.js';
import { openBenchTable } from '../lib/tables.js';

const [dir, indexArg, commitsArg, rowsArg] = process.argv.slice(2);
const index = Number(indexArg);
const commits = Number(commitsArg);
const rows = Number(rowsArg);

/** First key of commit `c` of this process: every (process, commit) owns its own key range. */
export function firstKey(processIndex: number, c: number, rowsPerCommit: number): number {
  return (processIndex * 100_000 + c) * rowsPerCommit;
}

async function main(): Promise<void> {
  const counting = new CountingStore(new LocalStore(join(dir, 'warehouse')));
  const table = await openBenchTable(counting, 'procs');
  // Warm the code paths before the start line, so the race starts with every process ready.
  makeRows(range(rows, 0), 0);
  writeFileSync(join(dir, `ready-${index}`), '');
  while (!existsSync(join(dir, 'go'))) await sleep(10);
  const started = performance.now();
  let gaveUp = 0;
  const lost: number[] = [];
  for (let c = 0; c < commits; c++) {
    const first = firstKey(index, c, rows);
    const writer = table.newWriter({ commitUser: `process-${index}` });
    try {
      await writer.writeArrow(makeRows(range(rows, first), 0));
      await writer.commit(`process-${index}-commit-${c}`);
    } catch (e) {
      if (!(e instanceof CommitRetriesExhaustedError)) throw e;
      gaveUp++;
      lost.push(first);
    } finally {
      await writer.close();
    }
  }
  const doneMs = performance.now() - started;
  const attempts = counting.counts.get('putIfAbsent snapshot') ?? 0;
  console.log(JSON.stringify({ doneMs, commits: commits - gaveUp, gaveUp, attempts, lost }));
}

if (process.argv[1]?.endsWith('commit-process-child.ts')) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
