/**
 * The heavy variant of rollback-writers.test.ts (`npm run stress`): 2 writer processes committing
 * at least 150 times each while 12 rollbacks (one to a tag) run at random moments. Seed printed;
 * VARVE_SEED replays the choices (the processes' timing is the machine's).
 */
import { describe, expect, it } from 'vitest';
import { testSeed } from '../helpers/random.js';
import { runRollbackRace } from './rollback-race.js';

describe('varve rollback while writer processes commit (stress)', () => {
  it("12 rollbacks among 2 writers' 300+ commits: nothing acknowledged is lost unnamed, nothing stuck", async () => {
    const seed = testSeed('rollback-writers-stress');
    const report = await runRollbackRace(seed, { commits: 150, rollbacks: 12 });
    console.log(
      `seed ${seed}: ${report.commits} commits, ${report.undoneAcks} undone by rollbacks: ${report.rollbacks.map((r) => r.out.split('\n')[0]).join(' | ')}`,
    );
    expect(report.violations, `seed ${seed}`).toEqual([]);
    expect(report.rollbacks.filter((r) => r.snapshot !== undefined).length, `seed ${seed}`).toBeGreaterThan(6);
  }, 900_000);
});
