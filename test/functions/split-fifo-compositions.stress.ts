/**
 * The heavier variant of split-fifo-compositions.test.ts (`npm run stress`): more buckets, more
 * snapshots and more failing splits, over several seeds (VARVE_SEED replays the first).
 */
import { describe, expect, it } from 'vitest';
import { captureMetrics, powertoolsEnv } from './harness.js';
import { testSeed } from '../helpers/random.js';
import { runComposition } from './fifo-compositions.js';

captureMetrics();
powertoolsEnv();

describe('split reader on SQS FIFO batch compositions (stress)', () => {
  for (let i = 0; i < 4; i++) {
    it(`run ${i + 1}: every change in order, no split dead-lettered within its own budget`, async () => {
      const seed =
        i === 0 ? testSeed('split-fifo-compositions-stress') : testSeed(`split-fifo-compositions-stress-${i + 1}`) + i;
      const r = await runComposition({
        seed,
        snapshots: [14, 20],
        keys: 32,
        buckets: [2, 5],
        failChance: 0.7,
        limitMs: 400_000,
      });
      console.log(
        `[split-fifo-compositions-stress] seed=${seed}`,
        JSON.stringify(r.stats),
        r.deadLetterLines.join('\n'),
      );
      expect(r.missing, `seed ${seed}`).toEqual([]);
      expect(r.orderViolations, `seed ${seed}`).toEqual([]);
      expect(r.deadLettered, `seed ${seed}`).toBe(0);
      expect(r.deadLetterLines, `seed ${seed}`).toEqual([]);
    }, 900_000);
  }
});
