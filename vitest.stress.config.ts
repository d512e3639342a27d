import { defineConfig } from 'vitest/config';

// `npm run stress`: the heavy variants of default-suite tests (many processes, many commits),
// sized by work and kept out of `npm test` so that the default suite stays green on a busy machine.
export default defineConfig({
  test: {
    include: ['test/**/*.stress.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 900_000,
    hookTimeout: 120_000,
    // The AWS SDK warns once per process that its 2027 releases need node >= 22 (engines says
    // >= 20): a notice for whoever upgrades the SDK, not a test result; one line per fork buried
    // the real stderr of a CI log.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    pool: 'forks',
    maxWorkers: 2,
  },
});
