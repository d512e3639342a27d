/**
 * The handlers stay thin (issue 13): each parses its event, calls the library and shapes its
 * response in at most 3,700 characters of code (whitespace not counted, so the formatter's line
 * breaks do not count: the 60 dense lines the rule allowed before the tree was formatted, which
 * the largest handler, ingest.ts, filled with 3,635); FIFO batches go through Powertools'
 * processor, never through a hand-written failure rule.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const MAX_CODE_CHARS = 3_700;
const FUNCTIONS = join(import.meta.dirname, '../../functions');
const handlers = readdirSync(FUNCTIONS).filter((f) => f.endsWith('.ts'));

describe('the function handlers', () => {
  it.each(handlers)('%s has at most 3,700 characters of code and no hand-written FIFO failure rule', (file) => {
    const text = readFileSync(join(FUNCTIONS, file), 'utf8');
    expect(
      text.replace(/\s/g, '').length,
      `${file}: move what is not parsing or shaping into lib/aws`,
    ).toBeLessThanOrEqual(MAX_CODE_CHARS);
    expect(text).not.toMatch(/Records\.slice\(/);
  });
});
