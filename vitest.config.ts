import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { fileURLToPath } from 'node:url';
import { readDurations } from './scripts/test-durations.js';
import { UNIT } from './test/unit-files.js';

/**
 * Files that take longest in wall time, mostly waiting (OS processes started through tsx, SQS
 * visibility timeouts on moto, worker pools), longest first, from the durations recorded in
 * test/durations.json (`npm run test:durations` after a run that wrote vitest.json, as .ci/run
 * does). They start first, so that the run does not end on one of them alone: in a fresh clone
 * vitest has no durations yet and starts the largest files first, which put tail-kill (≈ 65 s)
 * last, alone. A file with no recorded duration (a new one) keeps vitest's order after them.
 */
const LONG_FILE_MS = 20_000;
const DURATIONS = readDurations(fileURLToPath(new URL('./test/durations.json', import.meta.url)));
const LONG_FILES = Object.entries(DURATIONS)
  .filter(([, ms]) => ms >= LONG_FILE_MS)
  .sort((a, b) => b[1] - a[1])
  .map(([file]) => file);

class LongFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = LONG_FILES.findIndex((p) => f.moduleId.endsWith(`/${p}`));
      return i < 0 ? LONG_FILES.length : i;
    };
    return sorted
      .map((f, i) => ({ f, i }))
      .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
      .map(({ f }) => f);
  }
}

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // The AWS SDK warns once per process that its 2027 releases need node >= 22 (engines allows
    // 20.15+): a notice for whoever upgrades the SDK, not a test result; one line per fork buried
    // the real stderr of a CI log.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    pool: 'forks',
    // 2-core machines: more forks only adds contention.
    maxWorkers: 2,
    sequence: { sequencer: LongFilesFirst },
    projects: [
      { extends: true, test: { name: 'suite', include: ['test/**/*.test.ts'], exclude: ['test/infra/**', ...UNIT] } },
      // The model, stream and maintenance tests, and the other files with no module mocks, spies,
      // env or worker-pool settings (each on its own temp folder), share their forks too: a fresh
      // fork per file paid the imports and the decode and merge pools' worker start again (113
      // files: 349 s → 182–199 s of CPU). The list and its rule are in test/unit-files.ts, checked by
      // test/unit-project.test.ts; check a file added there with --sequence.shuffle.
      { extends: true, test: { name: 'unit', include: UNIT, isolate: false } },
      // The CDK assertion tests share their forks (isolate: false): each file only builds new Apps
      // and reads their templates, and a fresh fork per file paid aws-cdk-lib's load and warm-up
      // (≈ 7 s of CPU for the first synth) again for each of the 8 files (infra: 108 s → 53 s CPU).
      { extends: true, test: { name: 'cdk', include: ['test/infra/**/*.test.ts'], isolate: false } },
    ],
  },
});
