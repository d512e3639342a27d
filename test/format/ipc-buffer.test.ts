/** tableIPCInto: arrow.tableToIPC's bytes, written into a buffer the caller reuses. */
import * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { rowsToTable } from '../../lib/format/columns.js';
import { tableIPCInto } from '../../lib/format/ipc-buffer.js';
import type { Row } from '../../lib/schema/types.js';
import { rng, testSeed } from '../helpers/random.js';
import { allTypeFields, edgeRows, randomRows } from './fixtures.js';

const FIELDS = allTypeFields();

function physical(rows: Row[]): arrow.Table {
  return rowsToTable(FIELDS, rows, { sequence: rows.map((_, i) => i), kind: rows.map((_, i) => i % 4) });
}

describe('tableIPCInto', () => {
  it("writes arrow.tableToIPC's stream bytes for random tables, slices and multi-batch tables, reusing a large enough buffer", () => {
    const seed = testSeed('ipc-buffer');
    const r = rng(seed);
    let buffer: ArrayBuffer | undefined;
    for (let round = 0; round < 20; round++) {
      // Prepare: a random table, sometimes several batches, sliced at random bounds (offsets inside batches).
      const parts = Array.from({ length: r.int(1, 3) }, () =>
        physical(round === 0 ? edgeRows() : randomRows(r, FIELDS, r.int(0, 800))),
      );
      const whole = new arrow.Table(
        parts[0].schema,
        parts.flatMap((p) => p.batches),
      );
      const from = r.int(0, whole.numRows);
      const t = whole.slice(from, r.int(from, whole.numRows));
      // Act
      const before = buffer;
      const bytes = tableIPCInto(t, buffer);
      // Assess: the same bytes; the buffer passed in is used when it is large enough.
      const what = `round ${round}, ${t.numRows} rows in ${t.batches.length} batches, seed ${seed}`;
      expect(Buffer.from(bytes).equals(Buffer.from(arrow.tableToIPC(t, 'stream'))), what).toBe(true);
      expect(bytes.byteOffset, what).toBe(0);
      if (before !== undefined && before.byteLength >= bytes.byteLength) expect(bytes.buffer, what).toBe(before);
      buffer = bytes.buffer as ArrayBuffer;
    }
    // A buffer too small is left alone and a larger one returned.
    const big = physical(randomRows(r, FIELDS, 3000));
    const small = new ArrayBuffer(16);
    const out = tableIPCInto(big, small);
    expect(out.buffer).not.toBe(small);
    expect(Buffer.from(out).equals(Buffer.from(arrow.tableToIPC(big, 'stream')))).toBe(true);
  });
});
