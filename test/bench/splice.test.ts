import { describe, expect, it } from 'vitest';
import { renderReport } from '../../bench/lib/report.js';
import type { RunResult, SuiteResult } from '../../bench/lib/results.js';
import { spliceReport } from '../../bench/lib/splice.js';

function suite(n: number, id: string, value: number): SuiteResult {
  return {
    id,
    title: `${n}. Suite ${id}`,
    method: [`method of ${id}`],
    checks: [],
    measurements: [],
    ratios: [{ id: `${id}-r`, label: `ratio of ${id}`, value, min: value, max: value, target: 1 }],
    tables: [{ title: `table of ${id}`, columns: ['a'], rows: [[value]] }],
    durationS: value,
  };
}

function run(suites: SuiteResult[], commit: string): RunResult {
  return {
    mode: 'full',
    startedAt: '2026-12-02T00:00:00.000Z',
    machine: {
      cpus: 2,
      cpuModel: 'cpu',
      memoryGiB: 8,
      node: 'v20',
      platform: 'linux',
      loadAvgStart: [1, 1, 1],
      loadAvgEnd: [2, 2, 2],
      gitCommit: commit,
    },
    suites,
    skipped: [],
    durationS: 10,
  };
}

describe('spliceReport (bench --only=… --docs)', () => {
  it("replaces the re-run suites' sections and headline rows, keeps the others, and says which run each comes from", () => {
    // Prepare: a full run of three suites, and the hand-kept tail after it
    const full =
      renderReport(run([suite(1, 'a', 2), suite(2, 'b', 3), suite(3, 'c', 4)], 'full111')).markdown +
      '## 9. Hand-kept\n\nkept text\n';
    // Act: suite b re-run alone, twice (the second note replaces the first)
    const once = spliceReport(full, run([suite(2, 'b', 0.5)], 'only222')).markdown;
    const twice = spliceReport(once, run([suite(2, 'b', 0.25)], 'only333')).markdown;
    // Assess
    expect(twice).toContain('| Suite a | ratio of a | **2.00×**');
    expect(twice).toContain('| Suite b | ratio of b | **0.25×**');
    expect(twice).toContain('| Suite c | ratio of c | **4.00×**');
    expect(twice).not.toMatch(/ratio of b \| \*\*(3\.00|0\.50)×/);
    // Headline rows stay in suite order.
    expect(twice.indexOf('| Suite a | ratio of a')).toBeLessThan(twice.indexOf('| Suite b | ratio of b'));
    expect(twice.indexOf('| Suite b | ratio of b')).toBeLessThan(twice.indexOf('| Suite c | ratio of c'));
    expect(twice.match(/Re-run with `--only`/g)).toHaveLength(1);
    expect(twice).toMatch(
      /2 \(Suite b\) and their headline rows come from `npm run bench -- --only=b` .* varve commit only333/,
    );
    expect(twice).toContain('| varve commit | full111 |');
    expect(twice).toContain('kept text');
    expect(twice.match(/## 2\. Suite b/g)).toHaveLength(1);
  });

  it('adds a suite the document has no section for after the last generated section, with its headline row', () => {
    // Prepare: a full run of one suite, then a new suite run alone
    const full = `${renderReport(run([suite(1, 'a', 2)], 'full111')).markdown}## 9. Hand-kept\n\nkept text\n`;
    // Act
    const md = spliceReport(full, run([suite(2, 'b', 0.5)], 'only222')).markdown;
    // Assess: its section sits between the generated one and the closing rule; the hand-kept tail stays
    expect(md.match(/\n## 2\. Suite b\n/g)).toHaveLength(1);
    expect(md.indexOf('\n## 1. Suite a\n')).toBeLessThan(md.indexOf('\n## 2. Suite b\n'));
    expect(md.indexOf('\n## 2. Suite b\n')).toBeLessThan(md.indexOf('\n---\n'));
    expect(md).toContain('| Suite b | ratio of b | **0.50×**');
    expect(md).toContain('| Suite a | ratio of a | **2.00×**');
    expect(md).toContain('## 9. Hand-kept\n\nkept text');
  });

  it('refuses when the document has neither the section nor a closing rule to put it before', () => {
    const full = renderReport(run([suite(1, 'a', 2)], 'full111')).markdown.replace(/\n---\n/g, '\n');
    expect(() => spliceReport(full, run([suite(2, 'b', 1)], 'x'))).toThrow(
      /no section "2\. Suite b" and no closing rule/,
    );
  });
});
