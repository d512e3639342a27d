/**
 * FIFO batch compositions of split messages (fifo-compositions.ts): a split that only waited behind
 * a failed split of its bucket must not be pushed toward the dead-letter queue, and every change
 * still arrives in order. Seeded (VARVE_SEED replays the plans; batch compositions follow timing).
 */
import { describe, expect, it } from 'vitest';
import { captureMetrics, powertoolsEnv, captureLogs } from './harness.js';
import { testSeed } from '../helpers/random.js';
import { runComposition } from './fifo-compositions.js';

/** The functions' log lines: an ERROR line fails the test that logged it (harness.ts). */
captureLogs();

captureMetrics();
powertoolsEnv();

describe('split reader on SQS FIFO batch compositions', () => {
  it('delivers every change in order and dead-letters no split whose own failures stay within the budget', async () => {
    const seed = testSeed('split-fifo-compositions');
    const r = await runComposition({
      seed,
      snapshots: [8, 10],
      keys: 16,
      buckets: [2, 3],
      failChance: 0.6,
      limitMs: 100_000,
    });
    console.log(`[split-fifo-compositions] seed=${seed}`, JSON.stringify(r.stats), r.deadLetterLines.join('\n'));
    expect(r.missing, `seed ${seed}`).toEqual([]);
    expect(r.orderViolations, `seed ${seed}`).toEqual([]);
    expect(r.deadLettered, `seed ${seed}`).toBe(0);
    expect(r.deadLetterLines, `seed ${seed}`).toEqual([]);
    // The scenario did put splits behind failed ones.
    expect(r.stats.behind, `seed ${seed}`).toBeGreaterThan(0);
  }, 240_000);
});
