/**
 * A table packed on one side of a MessageChannel (buffers transferred) and unpacked on the other
 * holds exactly what it held: every column type varve writes, nulls and edge values, sliced tables
 * (offsets into shared regions) and several batches.
 */
import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { packTable, unpackTable, type PackedTable } from '../../lib/format/arrow-transfer.js';
import { rowsToTable } from '../../lib/format/columns.js';
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
      const from = r.int(0, rows.length - 1), to = r.int(from, rows.length);
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
    const t = rowsToTable([field(1, 'a', 'INT', { nullable: false })], Array.from({ length: 1000 }, (_, i) => ({ a: i })));
    const values = t.getChildAt(0)!.data[0].values as Int32Array;
    const got = roundTrip(t);
    expect(values.byteLength).toBe(0);
    expect(got.getChildAt(0)!.get(999)).toBe(999);
  });
});
