import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Files that take longest in wall time, mostly waiting (OS processes started through tsx, SQS
 * visibility timeouts on moto, worker pools), longest first, from the JSON report of an idle run.
 * They start first, so that the run does not end on one of them alone: in a fresh clone vitest has
 * no durations yet and starts the largest files first, which put tail-kill (≈ 65 s) last, alone.
 */
const LONG_FILES = [
  'test/cli/tail-kill.test.ts',
  'test/table/writer-encoder-pool.test.ts',
  'test/functions/split-crash-budget.test.ts',
  'test/functions/split-fifo-compositions.test.ts',
  'test/functions/pipeline.test.ts',
  'test/maintenance/compact-upload.test.ts',
  'test/cli/guarantees.test.ts',
  'test/store/s3-store.test.ts',
  'test/functions/commit.test.ts',
  'test/functions/request-counts.test.ts',
];

/** The tests that run in shared forks (project `unit`). */
const UNIT = [
  ...['schema', 'manifest', 'mergetree', 'snapshot', 'iceberg', 'catalog', 'stream', 'maintenance'].map((d) => `test/${d}/**/*.test.ts`),
  // The files of these directories that neither spy, mock, set env nor count or configure a pool.
  ...['arrow-import', 'arrow-schema', 'arrow-transfer', 'columns', 'data-file-stream', 'decimal', 'ipc-buffer', 'parquet-splice'].map((f) => `test/format/${f}.test.ts`),
  ...['local-store', 'open-store', 'upload'].map((f) => `test/store/${f}.test.ts`),
  'test/runtime/local-runtime.test.ts',
  ...['alter', 'append-commit-hooks', 'append-model', 'append-table', 'deduplication-window', 'input', 'land-rows', 'model', 'overwrite', 'predicate', 'record-columns', 'rescale', 'schema-model', 'shared-committer', 'value-stats-pruning', 'writer'].map((f) => `test/table/${f}.test.ts`),
];

class LongFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = LONG_FILES.findIndex((p) => f.moduleId.endsWith(`/${p}`));
      return i < 0 ? LONG_FILES.length : i;
    };
    return sorted.map((f, i) => ({ f, i })).sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i).map(({ f }) => f);
  }
}

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // The AWS SDK warns once per process that its 2027 releases need node >= 22 (engines says
    // >= 20): a notice for whoever upgrades the SDK, not a test result; one line per fork buried
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
      // files: 349 s → 182–199 s of CPU). Check a file added here with --sequence.shuffle.
      { extends: true, test: { name: 'unit', include: UNIT, isolate: false } },
      // The CDK assertion tests share their forks (isolate: false): each file only builds new Apps
      // and reads their templates, and a fresh fork per file paid aws-cdk-lib's load and warm-up
      // (≈ 7 s of CPU for the first synth) again for each of the 8 files (infra: 108 s → 53 s CPU).
      { extends: true, test: { name: 'cdk', include: ['test/infra/**/*.test.ts'], isolate: false } },
    ],
  },
});
