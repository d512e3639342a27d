/**
 * Records each test file's wall time from a vitest JSON report (.ci/run writes vitest.json) into
 * test/durations.json, which vitest.config.ts reads to start the longest files first. Files in the
 * report replace their old durations; files no longer in test/ are dropped; others are kept, so a
 * partial run updates only what it ran.
 *
 * Usage: npm run test:durations [-- path/to/report.json]
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readDurations } from './test-durations.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DURATIONS = path.join(ROOT, 'test', 'durations.json');

interface Report {
  testResults?: Array<{ name?: unknown; startTime?: unknown; endTime?: unknown }>;
}

const reportPath = path.resolve(process.argv[2] ?? path.join(ROOT, 'vitest.json'));
if (!existsSync(reportPath)) {
  console.error(
    `no vitest JSON report at ${reportPath}: run the suite with --reporter=json --outputFile.json=vitest.json (as .ci/run does) first`,
  );
  process.exit(1);
}
const report = JSON.parse(readFileSync(reportPath, 'utf8')) as Report;
if (!Array.isArray(report.testResults)) {
  console.error(`${reportPath} is not a vitest JSON report (no testResults array)`);
  process.exit(1);
}
const durations = readDurations(DURATIONS);
let recorded = 0;
for (const r of report.testResults) {
  if (typeof r.name !== 'string' || typeof r.startTime !== 'number' || typeof r.endTime !== 'number') continue;
  durations[path.relative(ROOT, r.name).split(path.sep).join('/')] = Math.round(r.endTime - r.startTime);
  recorded++;
}
const kept = Object.keys(durations)
  .filter((f) => existsSync(path.join(ROOT, f)))
  .sort();
writeFileSync(DURATIONS, `${JSON.stringify(Object.fromEntries(kept.map((f) => [f, durations[f]])), null, 2)}\n`);
console.log(
  `test/durations.json: ${recorded} files recorded from ${path.relative(ROOT, reportPath)}, ${kept.length} files in all`,
);
