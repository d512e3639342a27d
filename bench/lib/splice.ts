/**
 * Puts the sections of a partial run (`npm run bench -- --only=…`) into an existing
 * docs/BENCHMARKS.md: each re-run suite's section and its headline rows are replaced, the other
 * sections stay as the full run left them, and a note under the run table says which sections
 * come from which run (so a reader never takes a mix for one run).
 */
import { num, renderReport } from './report.js';
import type { RunResult } from './results.js';

const NOTE_PREFIX = '> **Re-run with `--only`:**';

/** The text of section `## <title>` in `md` (up to the next `## ` section or the closing rule), or undefined. */
function sectionOf(md: string, title: string): { start: number; end: number } | undefined {
  const start = md.indexOf(`\n## ${title}\n`);
  if (start < 0) return undefined;
  const next = [md.indexOf('\n## ', start + 1), md.indexOf('\n---\n', start + 1)].filter((i) => i >= 0);
  return { start: start + 1, end: (next.length ? Math.min(...next) : md.length) + 1 };
}

/** `previous` with the suites of `run` (a partial run) in place of their earlier sections and headline rows. */
export function spliceReport(previous: string, run: RunResult): { markdown: string; charts: Map<string, string> } {
  const { markdown: fresh, charts } = renderReport(run);
  let md = previous;
  for (const s of run.suites) {
    const from = sectionOf(fresh, s.title);
    if (!from) throw new Error(`section "${s.title}" is missing from the rendered run; run the full bench instead`);
    const to = sectionOf(md, s.title);
    if (to) {
      md = md.slice(0, to.start) + fresh.slice(from.start, from.end) + md.slice(to.end);
      continue;
    }
    // A suite the report has no section for yet: its section goes after the last generated one.
    const rule = md.indexOf('\n---\n');
    if (rule < 0)
      throw new Error(`docs/BENCHMARKS.md has no section "${s.title}" and no closing rule; run the full bench instead`);
    md = `${md.slice(0, rule)}\n${fresh.slice(from.start, from.end).replace(/^\n+|\n+$/g, '')}\n${md.slice(rule)}`;
  }
  // Headline rows: those of the re-run suites are replaced, in place.
  const freshRows = fresh
    .split('\n')
    .filter(
      (l) => l.startsWith('| ') && run.suites.some((s) => l.startsWith(`| ${s.title.replace(/^\d+\.\s*/, '')} | `)),
    );
  const headStart = md.indexOf('\n## Headline ratios\n');
  const headEnd = md.indexOf('\n## ', headStart + 1);
  if (headStart < 0 || headEnd < 0)
    throw new Error('docs/BENCHMARKS.md has no headline table; run the full bench instead');
  const lines = md.slice(headStart, headEnd).split('\n');
  const isRerun = (l: string) => run.suites.some((s) => l.startsWith(`| ${s.title.replace(/^\d+\.\s*/, '')} | `));
  const at = lines.findIndex(isRerun);
  const kept = lines.filter((l) => !isRerun(l));
  kept.splice(at < 0 ? kept.length - 1 : at, 0, ...freshRows);
  md = md.slice(0, headStart) + kept.join('\n') + md.slice(headEnd);
  // The note saying which sections come from the partial run.
  const m = run.machine;
  const note =
    `${NOTE_PREFIX} ${run.suites.map((s) => s.title.replace(/\.\s.*$/, '')).join(', ')} (${run.suites.map((s) => s.title.replace(/^\d+\.\s*/, '')).join(', ')}) and their headline rows come from ` +
    `\`npm run bench -- --only=${run.suites.map((s) => s.id).join(',')}\` started ${run.startedAt} at varve commit ${m.gitCommit ?? 'unknown'}${m.gitDirty ? ' (with uncommitted changes)' : ''}, ` +
    `load ${m.loadAvgStart.map((x) => x.toFixed(2)).join(' / ')} at start and ${m.loadAvgEnd?.map((x) => x.toFixed(2)).join(' / ') ?? '–'} at end, ${run.durationS !== undefined ? `${num(run.durationS)} s` : '–'}; ` +
    'every other section is from the full run in the table above.';
  // A note from an earlier re-run of the same suites is replaced.
  const onlyArg = `--only=${run.suites.map((s) => s.id).join(',')}\``;
  md = md
    .split('\n')
    .filter((l) => !(l.startsWith(NOTE_PREFIX) && l.includes(onlyArg)))
    .join('\n')
    .replace(/\n\n\n+/g, '\n\n');
  const anchor = md.indexOf('\nEach timing is the median');
  if (anchor < 0) throw new Error('docs/BENCHMARKS.md has no run table; run the full bench instead');
  md = `${md.slice(0, anchor + 1)}${note}\n\n${md.slice(anchor + 1)}`;
  return { markdown: md, charts };
}
