import { describe, expect, it } from 'vitest';
import {
  BenchCheckError,
  addChecksums,
  assertChecksum,
  expectedChecksum,
  tableChecksum,
} from '../../bench/lib/checksum.js';
import { makeRows, range, sampleKeys, shuffled } from '../../bench/lib/data.js';
import { concatTables } from '../../lib/format/columns.js';

describe('benchmark checksums', () => {
  it('computes the same checksum from Arrow buffers as from the generator', () => {
    // Prepare
    const keys = shuffled(5000, 3);
    // Act
    const fromTable = tableChecksum(makeRows(keys, 7));
    // Assess
    expect(fromTable).toEqual(expectedChecksum(keys, 7));
    expect(fromTable.rows).toBe(5000);
    expect(fromTable.optCount).toBeGreaterThan(3500);
    expect(fromTable.optCount).toBeLessThan(4500);
  });

  it('is independent of row order and of how the rows are chunked', () => {
    // Prepare
    const a = makeRows(range(3000), 2);
    const b = makeRows(shuffled(3000, 9), 2);
    const chunked = concatTables([a.slice(0, 1000), a.slice(1000)], a.schema);
    // Act / Assess
    expect(tableChecksum(b)).toEqual(tableChecksum(a));
    expect(tableChecksum(chunked)).toEqual(tableChecksum(a));
  });

  it('catches a key holding another version of its values', () => {
    // Prepare: the same keys, one of them at version 1 instead of 0.
    const versions = new Int32Array(1000);
    versions[500] = 1;
    // Act
    const wrong = tableChecksum(makeRows(range(1000), versions));
    // Assess
    expect(() => assertChecksum('test', wrong, expectedChecksum(range(1000), 0))).toThrow(BenchCheckError);
  });

  it('catches a missing row and a duplicated one even when the counts agree', () => {
    // Prepare: row 10 replaced by a second copy of row 11.
    const keys = range(100);
    keys[10] = 11;
    // Act / Assess
    expect(() => assertChecksum('test', tableChecksum(makeRows(keys, 0)), expectedChecksum(range(100), 0))).toThrow(
      /keySum/,
    );
  });

  it('adds and subtracts checksums of row sets', () => {
    // Prepare
    const all = expectedChecksum(range(200), 0);
    const part = expectedChecksum(range(50), 0);
    // Act
    const rest = addChecksums([all, part], [1, -1]);
    // Assess
    expect(rest).toEqual(expectedChecksum(range(150, 50), 0));
  });

  it('samples distinct keys reproducibly from a seed', () => {
    // Act
    const a = sampleKeys(1_000_000, 10_000, 42);
    const b = sampleKeys(1_000_000, 10_000, 42);
    // Assess
    expect(new Set(a).size).toBe(10_000);
    expect(a).toEqual(b);
    expect(Math.max(...a)).toBeLessThan(1_000_000);
  });
});
