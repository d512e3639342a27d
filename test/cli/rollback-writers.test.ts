/**
 * Rollbacks while two writer processes commit (issue 30 §1; rollback-race.ts): every acknowledged
 * commit is in the final table or named as undone by a rollback's output, the table equals a
 * replay of its history, verify is ok and the table stays writable. Small here; the stress
 * variant (rollback-writers.stress.ts) runs many more commits and rollbacks. Seed printed.
 */
import { describe, expect, it } from 'vitest';
import { testSeed } from '../helpers/random.js';
import { runRollbackRace } from './rollback-race.js';

describe('varve rollback while writer processes commit', () => {
  it("3 rollbacks (one to a tag) among 2 writers' commits: nothing acknowledged is lost unnamed, nothing stuck", async () => {
    const seed = testSeed('rollback-writers');
    const report = await runRollbackRace(seed, { commits: 12, rollbacks: 3 });
    console.log(
      `seed ${seed}: ${report.commits} commits, ${report.undoneAcks} undone by rollbacks: ${report.rollbacks.map((r) => r.out.split('\n')[0]).join(' | ')}`,
    );
    expect(report.violations, `seed ${seed}`).toEqual([]);
    expect(
      report.rollbacks.some((r) => r.snapshot !== undefined),
      `seed ${seed}`,
    ).toBe(true);
  }, 600_000);
});
