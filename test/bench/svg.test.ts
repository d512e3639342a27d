import { describe, expect, it } from 'vitest';
import { lineChart, niceTicks } from '../../bench/lib/svg.js';

describe('benchmark charts', () => {
  it('picks round ticks covering the range', () => {
    // Act / Assess
    expect(niceTicks(0, 1000)).toEqual([0, 200, 400, 600, 800, 1000]);
    expect(niceTicks(0, 7.3)).toEqual([0, 2, 4, 6, 8]);
  });

  it('draws every point, error bar and series name', () => {
    // Act
    const svg = lineChart({
      file: 'x.svg',
      title: 'T <1>',
      xLabel: 'rows',
      yLabel: 'ms',
      xLog: true,
      series: [
        {
          name: 'a',
          points: [
            { x: 1e5, y: 10, lo: 8, hi: 12 },
            { x: 1e6, y: 12 },
          ],
        },
        { name: 'b', points: [{ x: 1e5, y: 100 }] },
      ],
    });
    // Assess
    expect(svg.match(/<circle /g)).toHaveLength(3);
    expect(svg).toContain('T &lt;1&gt;');
    expect(svg).toContain('(log scale)');
    expect(svg).toContain('>a</text>');
    expect(svg).toContain('>b</text>');
  });
});
