import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BEGIN_MARKER, END_MARKER, spliceMemorySection, type MemoryRun } from '../../bench/memory/docs.js';

function run(commit: string, readPeakMB: number, scale = 1): MemoryRun {
  return {
    scale,
    startedAt: '2026-12-02T05:00:00.000Z',
    machine: {
      cpus: 2,
      cpuModel: 'cpu',
      memoryGiB: 8,
      node: 'v20',
      platform: 'linux',
      loadAvgStart: [0.5, 0.4, 0.3],
      loadAvgEnd: [1.1, 1, 0.9],
      gitCommit: commit,
    },
    durationS: 1500,
    cases: [
      {
        what: '`varve write` of 2,000,000 JSONL rows',
        rows: 2_000_000,
        floorMB: 150,
        peakMB: 300,
        goalMB: 96,
        ms: 40_000,
      },
      {
        what: 'full compaction of 1,000,000 rows in 10 sorted runs',
        rows: 1_000_000,
        floorMB: 120,
        peakMB: 300,
        goalMB: 512,
        ms: 20_000,
      },
      {
        what: 'streamed read (`table.scan()`) of those 1,000,000 rows',
        rows: 1_000_000,
        floorMB: 120,
        peakMB: 200,
        goalMB: 128,
        ms: 2_000,
      },
      {
        what: 'full compaction of 10,000,000 rows in 10 sorted runs',
        rows: 10_000_000,
        floorMB: 120,
        peakMB: 420,
        goalMB: 512,
        ms: 220_000,
      },
      {
        what: 'streamed read (`table.scan()`) of those 10,000,000 rows',
        rows: 10_000_000,
        floorMB: 120,
        peakMB: readPeakMB,
        goalMB: 128,
        ms: 20_000,
      },
    ],
  };
}

const DOC = `# Benchmarks\n\n## 10. CLI\n\ntext ten\n\n## 11. Memory at scale (issue 12)\n\nold intro\n\n| old | table |\n\nWhat the numbers say, and what is open:\n- hand-written\n\n## 12. Next\n\nnext text\n`;

describe('bench:memory --docs (spliceMemorySection)', () => {
  it('writes the measured table into §11 between markers, keeps the hand-written text and the other sections, and replaces its own table on the next run', () => {
    // Act: a first run (no markers yet), then a second over its output.
    const once = spliceMemorySection(DOC, run('aaa111', 260));
    const twice = spliceMemorySection(once, run('bbb222', 230, 0.1));
    // Assess: the old intro went; the hand-written text and the other sections stay, once.
    for (const md of [once, twice]) {
      expect(md).not.toContain('old intro');
      expect(md.split('What the numbers say').length).toBe(2);
      expect(md).toContain('- hand-written');
      expect(md).toContain('text ten');
      expect(md).toContain('## 12. Next\n\nnext text');
      expect(md.split(BEGIN_MARKER).length).toBe(2);
      expect(md.indexOf(END_MARKER)).toBeLessThan(md.indexOf('What the numbers say'));
    }
    expect(once).toContain('commit aaa111');
    expect(once).toContain(
      '| streamed read (`table.scan()`) of those 10,000,000 rows | 120 MB | 260 MB | **+140 MB** | ≤ +128 MB: **not met** | 20.0 s | 2.0 µs |',
    );
    expect(once).toContain(
      '| `varve write` of 2,000,000 JSONL rows | 150 MB | 300 MB | **+150 MB** | ≤ +96 MB: **not met** |',
    );
    expect(once).toContain('≤ +512 MB: met');
    expect(once).toContain('load average 0.50 / 0.40 / 0.30 at start');
    expect(once).toContain('took 25.0 min');
    expect(once).toContain('full compaction: 20.0 µs at 1,000,000 rows → 22.0 µs at 10,000,000 (× 1.10)');
    expect(twice).not.toContain('aaa111');
    expect(twice).toContain('| 120 MB | 230 MB | **+110 MB** | ≤ +128 MB: met |');
    expect(twice).toContain('VARVE_BENCH_SCALE=0.1');
  });

  it('fits the real docs/BENCHMARKS.md: its §11 has the markers, and the hand-measured text below them stays', () => {
    const md = readFileSync(join(__dirname, '../../docs/BENCHMARKS.md'), 'utf8');
    const out = spliceMemorySection(md, run('ccc333', 200));
    expect(out).toContain('commit ccc333');
    const tail = (s: string) => s.slice(s.indexOf(END_MARKER));
    expect(tail(out)).toBe(tail(md));
    expect(out.slice(0, out.indexOf('## 11. Memory'))).toBe(md.slice(0, md.indexOf('## 11. Memory')));
    expect(() => spliceMemorySection(md.replace(END_MARKER, ''), run('x', 1))).toThrow(/end marker/);
  });
});
