import { defineConfig } from 'vitest/config';

// `npm run stress`: the heavy variants of default-suite tests (many processes, many commits),
// sized by work and kept out of `npm test` so that the default suite stays green on a busy machine.
export default defineConfig({
  test: {
    include: ['test/**/*.stress.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 900_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
