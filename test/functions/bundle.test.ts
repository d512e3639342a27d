/**
 * The Lambda packages: every handler of functions/ bundles with infra/lambda.ts's esbuild settings
 * into clean CommonJS (no top-level await; no `import.meta` that is ever read — the one silenced warning is the encoder pool's guarded fallback), loads from a
 * folder holding only it and parquet-wasm's .wasm, and zips under 3 MB. Also: the names the
 * handlers emit are the ones the CDK constructs and alarms expect.
 */
import { describe, expect, it } from 'vitest';
import { VARVE_METRICS } from '../../infra/alarms.js';
import { SNAPSHOT_COMMITTED as INFRA_SNAPSHOT_COMMITTED } from '../../infra/stream-consumer.js';
import { SNAPSHOT_COMMITTED } from '../../lib/aws/commit-events.js';
import { METRIC } from '../../functions/shared/observability.js';
import { bundleFunction, functionNames, loadBundle, MAX_ZIPPED_BYTES } from '../../scripts/bundle-size.js';

describe('the Lambda bundles', () => {
  it('cover the six handlers the constructs deploy', () => {
    expect(functionNames()).toEqual(['commit', 'compact', 'discover', 'expire', 'ingest', 'read']);
  });

  it.each(['commit', 'compact', 'discover', 'expire', 'ingest', 'read'])(
    '%s bundles to clean CJS that loads and zips under 3 MB',
    async (name) => {
      // Act
      const b = await bundleFunction(name);

      // Assess
      expect(b.warnings).toEqual([]);
      expect(b.code).toMatch(/module\.exports/);
      expect(b.zippedBytes).toBeLessThan(MAX_ZIPPED_BYTES);
      expect(loadBundle(b)).toBe('function');
    },
  );

  it('keep class names through minification, so an error logged by a handler names its class', async () => {
    // Act: the read handler's WARN/ERROR lines print `${e.name}: ${e.message}`, and VarveError's
    // name is its class's name (new.target.name).
    const b = await bundleFunction('read');

    // Assess: minified without keepNames, these read as two-letter names (`La`, `k_`).
    for (const name of ['SinkTimeoutError', 'SplitGapError', 'ConsumerLeaseLostError'])
      expect(b.code).toContain(`"${name}"`);
  });
});

describe('the names the handlers emit', () => {
  it('are the metric names and the commit event the infra expects', () => {
    expect(METRIC).toEqual(VARVE_METRICS);
    expect(SNAPSHOT_COMMITTED).toBe(INFRA_SNAPSHOT_COMMITTED);
  });
});
