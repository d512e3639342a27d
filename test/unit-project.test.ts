import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { UNIT, unitFiles, unitRuleBreaks } from './unit-files.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

describe('the unit project (shared forks)', () => {
  it('lists only files that keep its rule: no mocks, spies, env writes or worker-pool settings, also in the helpers they import', () => {
    const files = unitFiles(ROOT);
    expect(files.length).toBeGreaterThan(100);
    const breaks = files.flatMap((f) => unitRuleBreaks(ROOT, f).map((b) => `${f} <- ${b}`));
    // A file listed here breaks the rule: move it out of test/unit-files.ts (or out of its folder's rule).
    expect(breaks).toEqual([]);
  });

  it('names files that exist', () => {
    const missing = UNIT.filter((p) => !p.includes('*') && !existsSync(new URL(`../${p}`, import.meta.url)));
    expect(missing).toEqual([]);
  });

  it('catches a file that breaks the rule, also through a helper it imports', () => {
    expect(unitRuleBreaks(ROOT, 'test/helpers/call-order.ts').join('\n')).toMatch(/vi\.spyOn/);
    // writer-split-pipeline records its stages' order through test/helpers/call-order.ts.
    expect(
      unitRuleBreaks(ROOT, 'test/table/writer-split-pipeline.test.ts').some((b) =>
        b.startsWith('test/helpers/call-order.ts (recordCalls): '),
      ),
    ).toBe(true);
  });
});
