import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
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
  },
});
