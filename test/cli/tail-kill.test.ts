/**
 * `varve tail --consumer-id` killed with SIGKILL 3 times while a writer commits (separate OS
 * processes); 20 times in tail-kill.stress.ts. The seed is printed; VARVE_SEED replays the kill timing.
 */
import { describe, expect, it } from 'vitest';
import { testSeed } from '../helpers/random.js';
import { runTailKill } from './tail-kill.js';

describe('varve tail killed with SIGKILL while a writer commits', () => {
  it('3 kills: every change printed, duplicates only whole splits, in commit order per key', async () => {
    const seed = testSeed('tail-kill');
    const report = await runTailKill(seed, 3);
    console.log(
      `seed ${seed}: ${report.kills} kills, ${report.commits} commits, ${report.lines} lines printed, ${report.duplicateLines} duplicates`,
    );
    expect(report.violations, `seed ${seed}`).toEqual([]);
    expect(report.commits).toBeGreaterThan(0);
  }, 300_000);
});
