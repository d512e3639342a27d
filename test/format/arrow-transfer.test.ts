/**
 * A table packed on one side of a MessageChannel (buffers transferred) and unpacked on the other
 * holds exactly what it held: every column type varve writes, nulls and edge values, sliced tables
 * (offsets into shared regions) and several batches.
 */
import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { packTable, shareTable, unpackTable, type PackedTable } from '../../lib/format/arrow-transfer.js';
import { sharedMemory } from '../../lib/format/column-layout.js';
import { rowsToTable, takeRows } from '../../lib/format/columns.js';
import { rng, testSeed } from '../helpers/random.js';
import { allTypeFields, edgeRows, field, randomRows } from './fixtures.js';

/** `t` packed, posted with its transfer list, received and unpacked. */
function roundTrip(t: arrow.Table): arrow.Table {
  const { port1, port2 } = new MessageChannel();
  try {
    const { packed, transfer } = packTable(t);
    port1.postMessage(packed, transfer);
    const got = receiveMessageOnPort(port2)!.message as PackedTable;
    return unpackTable(got, t.schema);
  } finally {
    port1.close();
    port2.close();
  }
}

describe('arrow-transfer', () => {
  it('moves tables of every type, sliced and in several batches, unchanged', () => {
    const seed = testSeed('arrow-transfer');
    const r = rng(seed);
    const fields = allTypeFields();
    const rows = [...edgeRows(), ...randomRows(r, fields, 300)];
    const source = rowsToTable(fields, rows);
    const expected = Buffer.from(arrow.tableToIPC(source, 'stream'));
    // Whole; sliced at random offsets (bitmaps and values views into larger regions); several batches.
    const cases: arrow.Table[] = [source];
    for (let i = 0; i < 5; i++) {
      const from = r.int(0, rows.length - 1),
        to = r.int(from, rows.length);
      cases.push(source.slice(from, to));
    }
    cases.push(new arrow.Table(source.schema, [...source.slice(0, 7).batches, ...source.slice(7).batches]));
    for (const t of cases) {
      const want = Buffer.from(arrow.tableToIPC(t, 'stream'));
      // Pack a copy (packing transfers the source's regions away).
      const copy = arrow.tableFromIPC(want);
      const got = roundTrip(copy);
      expect(got.numRows, `seed ${seed}`).toBe(t.numRows);
      expect(Buffer.from(arrow.tableToIPC(got, 'stream')).equals(want), `seed ${seed}`).toBe(true);
    }
    expect(expected.length).toBeGreaterThan(0);
  });

  it('a transferred region leaves the sending thread', () => {
    const t = rowsToTable(
      [field(1, 'a', 'INT', { nullable: false })],
      Array.from({ length: 1000 }, (_, i) => ({ a: i })),
    );
    const values = t.getChildAt(0)!.data[0].values as Int32Array;
    const got = roundTrip(t);
    expect(values.byteLength).toBe(0);
    expect(got.getChildAt(0)!.get(999)).toBe(999);
  });

  it('shares tables with another thread: every type, gathered into shared memory or not, same rows there, the same memory', () => {
    const seed = testSeed('arrow-share');
    const r = rng(seed);
    const fields = allTypeFields();
    const source = rowsToTable(fields, [...edgeRows(), ...randomRows(r, fields, 300)]);
    const order = Uint32Array.from({ length: source.numRows }, () => r.int(0, source.numRows - 1));
    // Gathered into shared memory (a pooled flush's bucket split), into this thread's memory, and sliced.
    const cases: [string, arrow.Table][] = [
      ['gathered into shared memory', takeRows(source, order, sharedMemory)],
      ['own memory', takeRows(source, order)],
      ['a slice of own memory', source.slice(r.int(1, 50), r.int(100, source.numRows))],
    ];
    for (const [what, t] of cases) {
      const want = Buffer.from(arrow.tableToIPC(t, 'stream'));
      const { port1, port2 } = new MessageChannel();
      try {
        // Act: shared, posted without a transfer list, received and rebuilt on the other side.
        const packed = shareTable(t);
        port1.postMessage(packed);
        const got = unpackTable(receiveMessageOnPort(port2)!.message as PackedTable, t.schema);
        // Assess: the same rows; every buffer is shared memory; buffers that were shared already are not copied.
        const label = `${what}, seed ${seed}`;
        expect(Buffer.from(arrow.tableToIPC(got, 'stream')).equals(want), label).toBe(true);
        for (const [c, d] of got.batches[0].data.children.entries()) {
          const sent = t.batches[0].data.children[c];
          for (const key of ['values', 'valueOffsets'] as const) {
            const v = d[key] as ArrayBufferView | undefined;
            if (v === undefined || v.byteLength === 0) continue;
            expect(v.buffer instanceof SharedArrayBuffer, `${label}: column ${c} ${key}`).toBe(true);
            if ((sent[key] as ArrayBufferView).buffer instanceof SharedArrayBuffer) {
              // The same memory: a write on this side is seen on the other.
              const mine = new Uint8Array(
                (sent[key] as ArrayBufferView).buffer,
                (sent[key] as ArrayBufferView).byteOffset,
                1,
              );
              const theirs = new Uint8Array(v.buffer, v.byteOffset, 1);
              mine[0] ^= 0xff;
              expect(theirs[0], `${label}: column ${c} ${key} is shared, not copied`).toBe(mine[0]);
              mine[0] ^= 0xff;
            }
          }
        }
      } finally {
        port1.close();
        port2.close();
      }
    }
  });
});
