/**
 * Puts the suites of a saved partial run into docs/BENCHMARKS.md, as `npm run bench --
 * --only=… --docs` does at the end of a run (bench/lib/splice.ts):
 *   npx tsx bench/splice-docs.ts <results.json of an --only run>
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RunResult } from './lib/results.js';
import { spliceReport } from './lib/splice.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));

async function main(): Promise<void> {
  const file = process.argv[2];
  if (!file) throw new Error('usage: npx tsx bench/splice-docs.ts <results.json of a partial run>');
  const run = JSON.parse(await readFile(file, 'utf8')) as RunResult;
  if (run.mode !== 'full')
    throw new Error(`${file} is a ${run.mode} run; only full-size runs go into docs/BENCHMARKS.md`);
  const previous = await readFile(join(REPO, 'docs/BENCHMARKS.md'), 'utf8');
  const { markdown, charts } = spliceReport(previous, run);
  await writeFile(join(REPO, 'docs/BENCHMARKS.md'), markdown);
  for (const [name, svg] of charts) await writeFile(join(REPO, 'docs/bench', name), svg);
  console.log(`docs/BENCHMARKS.md: replaced ${run.suites.map((s) => s.title).join('; ')}`);
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
