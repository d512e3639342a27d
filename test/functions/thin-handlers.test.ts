/**
 * The handlers stay thin (issue 13): each parses its event, calls the library and shapes its
 * response in at most 60 lines; FIFO batches go through Powertools' processor, never through a
 * hand-written failure rule.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const FUNCTIONS = join(import.meta.dirname, '../../functions');
const handlers = readdirSync(FUNCTIONS).filter((f) => f.endsWith('.ts'));

describe('the function handlers', () => {
  it.each(handlers)('%s has at most 60 lines and no hand-written FIFO failure rule', (file) => {
    const text = readFileSync(join(FUNCTIONS, file), 'utf8');
    expect(text.split('\n').filter((l, i, a) => i < a.length - 1 || l !== '').length).toBeLessThanOrEqual(60);
    expect(text).not.toMatch(/Records\.slice\(/);
  });
});
