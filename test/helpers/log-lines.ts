/**
 * The log of a split reader, a runtime consumer or a local runtime under test. Every line they log
 * is a WARN or an ERROR (a failed split, a dead letter, a skip of expired snapshots, a failed
 * discovery, a stopped consumer): a test that throws them away can pass over a loss. So a test
 * passes `log.add` and ends with `log.expectOnly(...)`, naming the lines it expects; any other line
 * fails the test, and is printed.
 */
import { expect } from 'vitest';

/** The ERROR line of a split the reader moved to the dead-letter queue (split-policy.ts). */
export const DEAD_LETTER = 'MOVED TO THE DEAD-LETTER QUEUE';

/** The WARN line of a split whose own call failed (sink, read, gap), or of one behind it in its group. */
export const SPLIT_FAILED = /failed on receive \d+: (its own error|behind failed head)/;

/** Collects log lines (see the file comment). */
export class LogLines {
  readonly lines: string[] = [];

  /** Pass as the `log` option. */
  readonly add = (line: string): void => {
    this.lines.push(line);
  };

  /** The lines that contain `pattern` (a string) or match it (a RegExp). */
  matching(pattern: string | RegExp): string[] {
    return this.lines.filter((l) => (typeof pattern === 'string' ? l.includes(pattern) : pattern.test(l)));
  }

  /** True once `expectOnly` looked at the lines (since the last `clear`). */
  checked = false;

  /** Forgets the lines so far (between tests). */
  clear(): void {
    this.lines.splice(0);
    this.checked = false;
  }

  /** Asserts that every line was expected: it contains or matches one of `expected` (none: no line was logged). */
  expectOnly(...expected: Array<string | RegExp>): void {
    this.checked = true;
    const unexpected = this.lines.filter(
      (l) => !expected.some((p) => (typeof p === 'string' ? l.includes(p) : p.test(l))),
    );
    expect(unexpected, 'lines logged that the test did not expect (a hidden failure, dead letter or skip?)').toEqual(
      [],
    );
  }
}
