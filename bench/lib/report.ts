/**
 * docs/BENCHMARKS.md and its SVG charts, generated from one run's results. Everything in the
 * report comes from the results: the text around the numbers only says how they were obtained.
 */
import type { Measurement, Ratio, RunResult, SuiteResult, TableSpec } from './results.js';
import { lineChart } from './svg.js';

/** A number with a sensible precision for its size. */
export function num(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 100) return Math.round(v).toLocaleString('en');
  if (a >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

function cell(v: number, unit: string): string {
  return unit === 'ms' || unit === 'µs' || unit === 'MB' ? `${num(v)} ${unit}` : `${num(v)}`;
}

function measurementTable(ms: Measurement[]): string {
  const lines = ['| case | median | min – max | IQR | n |', '|---|---:|---:|---:|---:|'];
  for (const m of ms) {
    const s = m.stats;
    const unit = m.unit === 'ms' || m.unit === 'µs' || m.unit === 'MB' ? m.unit : m.unit;
    const spread = s.n > 1 ? `${num(s.min)} – ${num(s.max)}` : '–';
    const iqr = s.n > 3 ? `${num(s.q1)} – ${num(s.q3)}` : '–';
    lines.push(
      `| ${m.label} | ${cell(s.median, m.unit)}${m.unit === 'ms' || m.unit === 'µs' || m.unit === 'MB' ? '' : ` ${unit}`} | ${spread} | ${iqr} | ${s.n} |`,
    );
  }
  return lines.join('\n');
}

function verdict(r: Ratio): string {
  if (r.target === undefined) return '';
  const ok = r.lowerIsBetter === false ? r.value >= r.target : r.value <= r.target;
  const aim = `aim ${r.lowerIsBetter === false ? '≥' : '≤'} ${r.target}×`;
  return ok ? `meets (${aim})` : `**misses** (${aim})`;
}

/**
 * What a headline ratio does not say, printed beside it (by ratio id, so that a saved run renders
 * with them too): the fair-report rule of issue 15 — no headline without its caveat.
 */
export const CAVEATS: Record<string, string> = {
  'write-vs-raw':
    'raw writes one unsorted file on one thread and commits nothing; varve sorts by key, splits into 4 buckets, encodes their files on worker threads beside the sorting thread and commits a snapshot (one thread: next row)',
  'write-1t-vs-raw':
    'both on one thread; raw writes one unsorted file and commits nothing, varve sorts, splits into 4 buckets and commits',
  'merge-vs-raw':
    'raw decodes the same files without merging: the floor of any reader of this layout, not a competing engine',
  'merge-vs-duckdb':
    'DuckDB runs the query shown in §2 (the best we found for this layout) and materialises its result; one thread each',
  'merge-vs-duckdb-default':
    'varve merges on one JS thread while its decoder workers (one per core) decode row groups; DuckDB runs one thread per core',
  'varve-growth':
    'the upsert writes only the new rows: it defers the merge to reads (§2, §7: read cost grows with sorted runs until compaction)',
  'cow-vs-varve-1000000': 'copy-on-write pays at write time what varve pays at read and compaction time (§2, §7)',
  'cow-vs-varve-10000000': 'copy-on-write pays at write time what varve pays at read and compaction time (§2, §7)',
  'compact-vs-raw':
    'not like for like: the baseline reads and rewrites every input row, compaction writes only the merged (newest) rows — the same-output ratio is the next row',
  'compact-vs-same-output':
    "same rows out: DuckDB (one thread) deduplicates the same files with the §2 query and COPYs only the newest rows, sorted by key, one zstd file per bucket at varve's row-group size, fsynced; its own Parquet writer (encodings differ) and no commit",
  'local-commit-vs-put':
    "the latency includes the writer flush (up to 4 data files encoded and fsynced one bucket after another), most of it; the commit's own requests (index claim, manifest and list, snapshot; expiry marks the index later) take a few ms",
  's3-commit-vs-put':
    "the latency includes the writer flush (up to 4 data-file PUTs, one bucket after another) before the commit's own requests (index claim, manifest and list, snapshot; expiry marks the index later)",
  'local-16-vs-1-writers':
    'writers in one process share one committer (several commits per snapshot); separate processes race, see the spread below',
  'procs-spread': 'completion times of processes racing on a local folder, not throughput; one run',
};

function ratioTable(rs: Array<Ratio & { suite?: string }>, withSuite: boolean): string {
  const head = withSuite
    ? '| benchmark | ratio | value | per-repetition spread | aim |'
    : '| ratio | value | per-repetition spread | aim |';
  const lines = [head, withSuite ? '|---|---|---:|---:|---|' : '|---|---:|---:|---|'];
  for (const r of rs) {
    const spread =
      r.min === r.max || !Number.isFinite(r.min) || !Number.isFinite(r.max) ? '–' : `${num(r.min)}× – ${num(r.max)}×`;
    const caveat = CAVEATS[r.id];
    const cells = [caveat ? `${r.label} — _${caveat}_` : r.label, `**${num(r.value)}×**`, spread, verdict(r)];
    lines.push(`| ${withSuite ? `${r.suite} | ` : ''}${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

function freeTable(t: TableSpec): string {
  return [
    `**${t.title}**`,
    '',
    `| ${t.columns.join(' | ')} |`,
    `|${t.columns.map(() => '---').join('|')}|`,
    ...t.rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

function suiteSection(s: SuiteResult): string {
  const parts = [`## ${s.title}`, ''];
  parts.push('**How it is measured**', '', ...s.method.map((m) => (m.startsWith('```') ? m : `- ${m}`)), '');
  parts.push('**Checked on every repetition** (a mismatch fails the run)', '', ...s.checks.map((c) => `- ${c}`), '');
  parts.push(measurementTable(s.measurements), '');
  if (s.ratios.length) parts.push(ratioTable(s.ratios, false), '');
  for (const t of s.tables ?? []) parts.push(freeTable(t), '');
  for (const c of s.charts ?? []) parts.push(`![${c.title}](bench/${c.file})`, '');
  if (s.durationS !== undefined) parts.push(`_Suite wall time: ${num(s.durationS)} s._`, '');
  return parts.join('\n');
}

/** The markdown report and the chart files (name → SVG text) of a run. */
export function renderReport(run: RunResult): { markdown: string; charts: Map<string, string> } {
  const m = run.machine;
  const charts = new Map<string, string>();
  for (const s of run.suites) for (const c of s.charts ?? []) charts.set(c.file, lineChart(c));
  const headline = run.suites.flatMap((s) => s.ratios.map((r) => ({ ...r, suite: s.title.replace(/^\d+\.\s*/, '') })));
  const md = [
    '# varve benchmarks',
    '',
    `> Generated by \`npm run bench${run.mode === 'quick' ? ' -- --quick --docs' : ''}\` — do not edit by hand. ${run.mode === 'quick' ? '**This is a QUICK run (smaller sizes, fewer repetitions): a smoke test, not the reference numbers.**' : 'Full run.'}`,
    '',
    '**Read the ratios, not the milliseconds.** These numbers come from one run on one shared machine: absolute times move by tens of percent from one run to the next (and more when other work shares the cores). Each ratio compares two things measured in the same run, interleaved repetition by repetition, so that load hits both sides. No number here is a guarantee of anything on your machine.',
    '',
    '| | |',
    '|---|---|',
    `| date | ${run.startedAt} |`,
    `| mode | ${run.mode} |`,
    `| machine | ${m.cpus} × ${m.cpuModel}, ${num(m.memoryGiB)} GiB memory, ${m.platform} |`,
    `| Node | ${m.node} |`,
    `| load average at start (1/5/15 min) | ${m.loadAvgStart.map((x) => x.toFixed(2)).join(' / ')} |`,
    `| load average at end | ${m.loadAvgEnd?.map((x) => x.toFixed(2)).join(' / ') ?? '–'} |`,
    `| varve commit | ${m.gitCommit ?? 'unknown'}${m.gitDirty ? ' (with uncommitted changes)' : ''} |`,
    `| wall time | ${run.durationS !== undefined ? `${num(run.durationS)} s` : '–'} |`,
    '',
    'Each timing is the median of the measured repetitions (after warm-up), with min – max and, from 4 repetitions up, the interquartile range. Data is generated in-process from fixed seeds: a BIGINT key, INT, DOUBLE, STRING and nullable STRING (20 % null). Every benchmark verifies its result against checksums computed from the generator (row count, key sum, a key × value mix, sums over every column); a fast wrong answer fails the run.',
    '',
    '## Headline ratios',
    '',
    ratioTable(headline, true),
    '',
    ...(run.skipped.length ? ['**Skipped:** ' + run.skipped.map((s) => `${s.id} (${s.reason})`).join('; '), ''] : []),
    ...run.suites.map(suiteSection),
    '---',
    '',
    'Reproduce: `npm run bench` (full; well under 15 minutes on 2 cores) or `npm run bench -- --quick` (smoke run, under 2 minutes; it leaves this file alone unless given `--docs`); `--only=write,merge-read` runs a subset (and leaves this file alone, unless given `--docs`: then its sections and headline rows replace theirs here, with a note saying so); `--profile` runs the chosen suites under the CPU profiler and prints the top frames and files by self time. Raw results of the last run: `bench/results.json` (not committed).',
    '',
  ].join('\n');
  return { markdown: md, charts };
}
