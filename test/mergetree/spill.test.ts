import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import { afterEach, describe, expect, it } from 'vitest';
import { SPILL_BATCH_ROWS, SpillDirectory } from '../../lib/mergetree/spill.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';

const roots: string[] = [];
afterEach(() => {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

function spillRoot(): string {
  const r = mkdtempSync(join(tmpdir(), 'varve-spill-test-'));
  roots.push(r);
  return r;
}

/** A piece of `n` rows numbered from `first` (the number says where a row belongs in its run). */
function piece(first: number, n: number, r: Rng): arrow.Table {
  const id = new BigInt64Array(n);
  const f = new Float64Array(n);
  const s: (string | null)[] = new Array(n);
  for (let i = 0; i < n; i++) {
    id[i] = BigInt(first + i);
    f[i] = (first + i) / 7;
    s[i] = r.chance(0.1) ? null : `v${first + i}-${'x'.repeat(r.int(0, 12))}`;
  }
  return new arrow.Table({
    id: arrow.makeVector(id),
    f: arrow.makeVector(f),
    s: arrow.vectorFromArray(s, new arrow.Utf8()),
  });
}

/** The run's columns joined: ids and doubles whole, strings every 7th row (a batch is 16k rows, so a moved batch shows in every column). */
function rowsOf(tables: arrow.Table[]): { id: bigint[]; f: number[]; s: (string | null)[] } {
  const out = { id: [] as bigint[], f: [] as number[], s: [] as (string | null)[] };
  let at = 0;
  for (const t of tables) {
    for (const v of t.getChild('id')!.toArray() as BigInt64Array) out.id.push(v);
    for (const v of t.getChild('f')!.toArray() as Float64Array) out.f.push(v);
    const s = t.getChild('s')!;
    for (let i = (7 - (at % 7)) % 7; i < t.numRows; i += 7) out.s.push(s.get(i));
    at += t.numRows;
  }
  return out;
}

async function collect(chunks: AsyncIterable<arrow.Table>): Promise<arrow.Table[]> {
  const out: arrow.Table[] = [];
  for await (const c of chunks) out.push(c);
  return out;
}

describe('SpillDirectory runs', () => {
  it('reads every run back whole and a batch at a time, no row lost or moved, runs written side by side and abandoned (seeded)', async () => {
    const seed = testSeed('spill-runs');
    const r = rng(seed);
    const spills = new SpillDirectory(spillRoot());
    // Each run's expected rows, by the number `end` gave it.
    const expected = new Map<number, arrow.Table[]>();
    for (let round = 0; round < 2; round++) {
      // Two or three runs open at once, appended to in turn; one of them may be abandoned.
      const open = Array.from({ length: r.int(2, 3) }, () => ({
        run: spills.openRun(),
        pieces: [] as arrow.Table[],
        next: 0,
      }));
      const appends = r.int(3, 6);
      for (let a = 0; a < appends; a++) {
        const o = r.pick(open);
        // Sizes around the batch size: empty, one row, exactly a batch, a batch and some, several batches.
        const n = r.pick([
          0,
          1,
          r.int(2, 500),
          SPILL_BATCH_ROWS,
          SPILL_BATCH_ROWS + r.int(1, 900),
          2 * SPILL_BATCH_ROWS + r.int(0, 2000),
        ]);
        const p = piece(o.next, n, r);
        o.next += n;
        o.run.append(p);
        o.pieces.push(p);
      }
      const abandoned = r.chance(0.5) ? r.int(0, open.length - 1) : -1;
      const before = spills.runCount;
      for (const i of r.chance(0.5) ? open.keys() : [...open.keys()].reverse()) {
        if (i === abandoned) open[i].run.abandon();
        else expected.set(open[i].run.end(), open[i].pieces);
      }
      expect(spills.runCount).toBe(before + open.length - (abandoned >= 0 ? 1 : 0));
    }
    expect(readdirSync(join(spills['dir']!))).toHaveLength(spills.runCount);
    for (const [n, pieces] of expected) {
      const want = rowsOf(pieces);
      const chunks = await collect(spills.chunks(n));
      for (const c of chunks) expect(c.numRows).toBeLessThanOrEqual(SPILL_BATCH_ROWS);
      const got = rowsOf(chunks);
      // Loss, duplication or reordering of a batch shows as a row out of place.
      expect(got.id.length).toBe(want.id.length);
      const firstWrong = want.id.findIndex((id, i) => got.id[i] !== id || got.f[i] !== want.f[i]);
      expect({ run: n, firstWrong }).toEqual({ run: n, firstWrong: -1 });
      expect(got.s).toEqual(want.s);
      // A run of empty pieces wrote no batch: read has no schema to give its empty table.
      const whole = spills.read(n);
      if (want.id.length === 0) expect(whole.numRows).toBe(0);
      else expect(rowsOf([whole])).toEqual(want);
    }
    const dir = spills['dir']!;
    spills.clear();
    expect(existsSync(dir)).toBe(false);
    expect(spills.runCount).toBe(0);
  });

  it('an abandoned run leaves no file and does not take a run number', async () => {
    const spills = new SpillDirectory(spillRoot());
    const r = rng(1);
    const a = spills.openRun();
    a.append(piece(0, 10, r));
    a.abandon();
    const b = spills.openRun();
    b.append(piece(100, 3, r));
    expect(b.end()).toBe(0);
    expect(readdirSync(spills['dir']!)).toHaveLength(1);
    expect(rowsOf(await collect(spills.chunks(0))).id).toEqual([100n, 101n, 102n]);
    spills.clear();
  });
});
