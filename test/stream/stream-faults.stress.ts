/**
 * The heavy variant of the randomized stream fault test (`npm run stress`): many seeds, longer
 * scenarios. Each seed is printed; replay one with VARVE_SEED (then only that seed runs).
 */
import { describe, expect, it } from 'vitest';
import { testSeed } from '../helpers/random.js';
import { describeReport, runStreamFaultScenario } from './stream-faults.js';

const SEEDS = Number(process.env.VARVE_STRESS_SEEDS ?? 25);

describe('stream under faults, stress', () => {
  it(`${SEEDS} seeds of 200 steps: target equals source, per-key order holds, progress never moves back, no silent loss`, async () => {
    const first = testSeed('stream-faults-stress');
    const seeds = process.env.VARVE_SEED ? [first] : Array.from({ length: SEEDS }, (_, i) => first + i);
    const failed: string[] = [];
    for (const seed of seeds) {
      let report;
      try {
        report = await runStreamFaultScenario(seed, {
          steps: Number(process.env.VARVE_STRESS_STEPS ?? 200),
          keys: 20,
          buckets: 4,
        });
      } catch (e) {
        // A scenario that throws (a consumer that never became idle, a failure it cannot recover
        // from) names its seed like a violation does; the other seeds still run.
        failed.push(`seed ${seed} (replay with VARVE_SEED=${seed}) threw: ${(e as Error).stack ?? String(e)}`);
        continue;
      }
      console.log(describeReport(report), report.violations.slice(0, 5), report.lossReports);
      if (report.violations.length > 0 && process.env.VARVE_FAULT_TRACE)
        console.log(report.log.filter((l) => !l.startsWith('varve: ack')).join('\n'));
      if (report.violations.length > 0)
        failed.push(
          `seed ${seed} (replay with VARVE_SEED=${seed}):\n  ${report.violations.slice(0, 8).join('\n  ')}\n  loss reports: ${report.lossReports.join(' | ')}`,
        );
    }
    expect(failed).toEqual([]);
  }, 900_000);
});
