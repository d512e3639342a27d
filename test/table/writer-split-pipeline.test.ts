/**
 * A large `writeArrow` table is split by bucket in the pooled flush, one bucket at a time, so the
 * encoder workers start on the first bucket while the writer splits and sorts the next
 * (lib/table/writer.ts `deferSplit`). Whatever the interleaving of large tables, small (held)
 * tables, row objects and commits, every bucket's level-0 files hold the rows, `_SEQUENCE_NUMBER`s
 * and `_VALUE_KIND`s of a writer fed row objects only (which never defers), with the pool on and
 * off, and the table reads back as a model of last-version-wins.
 */
import type * as arrow from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { readDataFile } from '../../lib/format/data-file.js';
import { rowsToTable, tableToRows } from '../../lib/format/columns.js';
import { configureEncoderPool, EncoderPool } from '../../lib/format/encoder-pool.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { COALESCE_ROWS, WriteBuffer } from '../../lib/mergetree/write-buffer.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import type { Row } from '../../lib/schema/types.js';
import { dataFileKey } from '../../lib/table/paths.js';
import type { Table } from '../../lib/table/table.js';
import { recordCalls } from '../helpers/call-order.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { testTable } from '../helpers/tables.js';

const FIELDS = parseSchemaText('id BIGINT NOT NULL, v STRING, n INT');

/** One step of a writer's life. */
type Step = { op: 'large' | 'small' | 'rows'; rows: Row[]; kinds: number[] } | { op: 'commit' };

afterAll(async () => {
  await configureEncoderPool({ restart: true });
});

function newTable(options: Record<string, string> = {}): Promise<Table> {
  return testTable({ schema: FIELDS, primaryKeys: ['id'], options: { bucket: '4', 'write-only': 'true', ...options } });
}

function batch(r: Rng, n: number, keySpace: number): { rows: Row[]; kinds: number[] } {
  const rows: Row[] = [];
  const kinds: number[] = [];
  for (let i = 0; i < n; i++) {
    rows.push({ id: BigInt(r.int(0, keySpace)), v: r.chance(0.1) ? null : `v${r.int(0, 1e6)}`, n: r.int(-1000, 1000) });
    // +I mostly, some -D, -U and +U: retractions must stay in order with the inserts they follow.
    kinds.push(r.chance(0.1) ? 3 : r.chance(0.05) ? 1 : r.chance(0.05) ? 2 : 0);
  }
  return { rows, kinds };
}

/** A random life: large tables (deferred), small ones (held), row objects, commits in between. */
function randomSteps(r: Rng): Step[] {
  const keySpace = r.int(5_000, 40_000);
  const steps: Step[] = [];
  const ops = Array.from({ length: r.int(3, 5) }, () => r.pick(['large', 'large', 'small', 'rows'] as const));
  // At least once a large table, a small one and a commit: the small one is held while the large
  // one waits to be split, and the commit must buffer the large one's rows first.
  const pair = r.int(0, ops.length);
  ops.splice(pair, 0, 'large', 'small');
  ops.forEach((op, k) => {
    const n = op === 'large' ? r.int(COALESCE_ROWS, COALESCE_ROWS + 12_000) : r.int(50, 2_000);
    steps.push({ op, ...batch(r, n, keySpace) });
    if (k === pair + 1 || (k !== pair && r.chance(0.3))) steps.push({ op: 'commit' });
  });
  steps.push({ op: 'commit' });
  return steps;
}

/** Runs the steps: as Arrow tables (`arrow`) where the step says so, or all as row objects. */
async function run(table: Table, steps: Step[], feed: 'arrow' | 'rows'): Promise<void> {
  const w = table.newWriter();
  let c = 0;
  for (const s of steps) {
    if (s.op === 'commit') await w.commit(`c${c++}`);
    else if (feed === 'rows' || s.op === 'rows') await w.write(s.rows, s.kinds);
    else
      await w.writeArrow(
        rowsToTable(FIELDS, s.rows, { sequence: new Float64Array(s.rows.length), kind: Uint8Array.from(s.kinds) }),
      );
  }
  await w.close();
}

/** Every live data file's rows (system columns included) by bucket, files in sequence order. */
async function filesByBucket(table: Table): Promise<Map<number, unknown[][]>> {
  const entries = [...(await readLiveFiles(table.store, table.path, (await table.snapshots.latest())!))];
  entries.sort((a, b) => a.bucket - b.bucket || a.file.minSequenceNumber - b.file.minSequenceNumber);
  const out = new Map<number, unknown[][]>();
  for (const e of entries) {
    const t = await readDataFile(
      (await table.store.get(dataFileKey(table.path, e.partition, e.bucket, e.file.fileName))).body,
    );
    const columns = t.schema.fields.map((f) => [...t.getChild(f.name)!]);
    const rows = Array.from({ length: t.numRows }, (_, i) => columns.map((col) => col[i]));
    out.set(e.bucket, [...(out.get(e.bucket) ?? []), ...rows]);
  }
  return out;
}

/** Last version wins per key; -U/-D remove it. */
function model(steps: Step[]): Row[] {
  const state = new Map<bigint, Row>();
  for (const s of steps) {
    if (s.op === 'commit') continue;
    s.rows.forEach((row, i) =>
      s.kinds[i] === 1 || s.kinds[i] === 3 ? state.delete(row.id as bigint) : state.set(row.id as bigint, row),
    );
  }
  return [...state.values()].sort((a, b) => ((a.id as bigint) < (b.id as bigint) ? -1 : 1));
}

function sortedRead(t: arrow.Table): Row[] {
  return tableToRows(t, FIELDS).sort((a, b) => ((a.id as bigint) < (b.id as bigint) ? -1 : 1));
}

describe('TableWriter: large Arrow tables split by bucket in the pooled flush', () => {
  it('keeps every row, its sequence number and kind, bucket by bucket, with the pool on and off (seeded interleavings against a model)', async () => {
    const seed = testSeed('writer split pipeline');
    const r = rng(seed);
    for (let round = 0; round < 2; round++) {
      const steps = randomSteps(r);
      const context = `round ${round}, steps ${steps.map((s) => (s.op === 'commit' ? 'C' : `${s.op}:${s.rows.length}`)).join(' ')}, seed ${seed}`;
      const reference = await newTable();
      const inline = await newTable();
      const pooled = await newTable();
      await configureEncoderPool({ threads: 0 });
      await run(reference, steps, 'rows');
      await run(inline, steps, 'arrow');
      await configureEncoderPool({ threads: 2, minFlushBytes: 0 });
      await run(pooled, steps, 'arrow');
      const expected = await filesByBucket(reference);
      for (const [name, table] of [
        ['inline', inline],
        ['pooled', pooled],
      ] as const) {
        const actual = await filesByBucket(table);
        expect([...actual.keys()].sort(), `${name}, ${context}`).toEqual([...expected.keys()].sort());
        for (const [bucket, rows] of expected)
          expect(actual.get(bucket), `${name}, bucket ${bucket}, ${context}`).toEqual(rows);
      }
      const want = model(steps);
      expect(sortedRead(await pooled.read()), context).toEqual(want);
      expect(sortedRead(await inline.read()), context).toEqual(want);
    }
  });

  it('splits the last large table one bucket at a time, each just before its sort, while the workers encode the bucket before', async () => {
    // Prepare: one large table over 4 buckets, then commit.
    const table = await newTable();
    const { rows, kinds } = batch(rng(7), COALESCE_ROWS * 2, 1e9);
    const input = rowsToTable(FIELDS, rows, { sequence: new Float64Array(rows.length), kind: Uint8Array.from(kinds) });
    await configureEncoderPool({ threads: 2, minFlushBytes: 0 });
    const order: string[] = [];
    const adds = recordCalls(order, WriteBuffer.prototype, 'addTable', 'split');
    const take = recordCalls(order, WriteBuffer.prototype, 'takeGatherPlan', 'sort');
    const post = recordCalls(order, EncoderPool.prototype, 'post', 'post');
    try {
      // Act
      const w = table.newWriter();
      await w.writeArrow(input);
      order.push('written');
      await w.commit('c');
      await w.close();
    } finally {
      adds.mockRestore();
      take.mockRestore();
      post.mockRestore();
    }
    // Assess: nothing was split by writeArrow; each bucket is split, sorted and posted in turn.
    expect(order.join(' ')).toMatch(/^written (split sort( post)+ ?){4}$/);
    expect(sortedRead(await table.read())).toEqual(model([{ op: 'large', rows, kinds }]));
  });
});
