/**
 * Randomized model test of append tables (no primary key): seeded sequences of appends (with
 * duplicate rows and nulls), deletes by predicate, dynamic-partition overwrites, truncates, drop
 * partition and compactions (normal and full), compared after every step with an in-memory model:
 * the same multiset of rows, and in the order written within each bucket. Then time travel to every
 * snapshot against the model's history, and a stream from the first snapshot, which must emit every
 * appended row in order per bucket (OVERWRITE snapshots are skipped, COMPACT ones are not read).
 */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { tableToRows } from '../../lib/format/columns.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import type { Row } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { readSplit } from '../../lib/stream/split.js';
import { StreamScan } from '../../lib/stream/stream-scan.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { readRows } from '../helpers/tables.js';

const PARTS = ['a', 'b', 'c'];

interface Config {
  name: string;
  options: Record<string, string>;
  /** The unit whose order a read keeps: the partition (bucket-unaware) or the partition and bucket key. */
  orderUnit(r: Row): string;
}

const configs: Config[] = [
  { name: 'bucket-unaware', options: {}, orderUnit: (r) => String(r.dt) },
  { name: 'bucket-key hashing', options: { bucket: '3', 'bucket-key': 'id' }, orderUnit: (r) => `${r.dt}|${r.id}` },
];

/** Each row is unique by `n` (a running number), so order and multiplicity are both checkable. */
const text = (r: Row) => `${r.dt}/${r.id}/${r.v}/${r.n}`;

function genRows(r: Rng, counter: { n: number }, parts = PARTS): Row[] {
  const rows: Row[] = [];
  for (let i = r.int(1, 20); i > 0; i--) {
    rows.push({ dt: r.pick(parts), id: r.int(1, 6), v: r.chance(0.2) ? null : r.int(-20, 20), n: counter.n++ });
  }
  return rows;
}

function genPredicate(r: Rng): { text: string; test: (row: Row) => boolean } {
  const k = r.int(-20, 20);
  const id = r.int(1, 6);
  const dt = r.pick(PARTS);
  switch (r.int(0, 3)) {
    case 0:
      return { text: `v < ${k}`, test: (row) => row.v !== null && (row.v as number) < k };
    case 1:
      return { text: `id = ${id} AND dt = '${dt}'`, test: (row) => row.id === id && row.dt === dt };
    case 2:
      return { text: `v IS NULL OR id > ${id}`, test: (row) => row.v === null || (row.id as number) > id };
    default:
      return {
        text: `NOT (v >= ${k}) AND dt != '${dt}'`,
        test: (row) => row.v !== null && !((row.v as number) >= k) && row.dt !== dt,
      };
  }
}

/** The read equals the model: same rows, and within each order unit the same order. */
function expectSame(cfg: Config, actual: Row[], model: Row[], what: string): void {
  expect(actual.map(text).sort(), `${what}: rows`).toEqual(model.map(text).sort());
  const units = (rows: Row[]) => {
    const m = new Map<string, string[]>();
    for (const row of rows) {
      const u = cfg.orderUnit(row);
      m.set(u, [...(m.get(u) ?? []), text(row)]);
    }
    return [...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  };
  expect(units(actual), `${what}: order within each bucket`).toEqual(units(model));
}

describe('append tables against a model', () => {
  for (const cfg of configs) {
    it(`${cfg.name}: appends, deletes, overwrites, compactions, time travel and a stream`, async () => {
      const seed = testSeed(`append-model ${cfg.name}`);
      const r = rng(seed);
      const catalog = new FolderCatalog(new MemoryStore());
      const t = await catalog.createTable('db.t', {
        fields: parseSchemaText('dt STRING NOT NULL, id INT, v INT, n BIGINT'),
        partitionKeys: ['dt'],
        // Small files and a low file count, so compaction picks windows often.
        options: {
          ...cfg.options,
          'target-file-size': '16 kb',
          'compaction.min.file-num': '2',
          'compaction.max.file-num': '4',
        },
      });
      const counter = { n: 0 };
      let model: Row[] = [];
      const history = new Map<number, Row[]>();
      /** What a stream must emit: every appended row, in order (per order unit). */
      const appended: Row[] = [];
      let compactedFiles = 0;
      for (let step = 0; step < 28; step++) {
        // One full compaction mid-way whatever the seed draws, so every run exercises the rewrite.
        const op = step === 14 ? 0.99 : r.next();
        let snapshotId: number | undefined;
        if (op < 0.5) {
          const rows = genRows(r, counter);
          snapshotId = (await t.write(rows)).snapshot?.id;
          model.push(...rows);
          appended.push(...rows);
        } else if (op < 0.65) {
          const p = genPredicate(r);
          const res = await t.deleteWhere(p.text);
          const before = model.length;
          model = model.filter((row) => !p.test(row));
          expect(res.rows, `delete ${p.text}`).toBe(before - model.length);
          snapshotId = res.snapshot?.id;
          if (res.snapshot) expect(res.snapshot.commitKind).toBe('OVERWRITE');
        } else if (op < 0.75) {
          const rows = genRows(r, counter, [r.pick(PARTS)]);
          snapshotId = (await t.overwrite(rows)).snapshot?.id;
          model = [...model.filter((row) => row.dt !== rows[0].dt), ...rows];
        } else if (op < 0.78) {
          snapshotId = (await t.truncate()).snapshot?.id;
          model = [];
        } else if (op < 0.82) {
          const dt = r.pick(PARTS);
          if (model.some((row) => row.dt === dt)) {
            snapshotId = (await t.dropPartition({ dt })).snapshot?.id;
            model = model.filter((row) => row.dt !== dt);
          }
        } else {
          if (step === 14) {
            // Two small files in one bucket for certain, so the full compaction has work.
            for (let k = 0; k < 2; k++) {
              const rows = genRows(r, counter, ['a']).map((row) => ({ ...row, id: 1 }));
              await t.write(rows);
              model.push(...rows);
              appended.push(...rows);
            }
          }
          const s = await compactTable(t, { full: step === 14 || r.chance(0.4) });
          compactedFiles += s.filesIn;
          snapshotId = s.snapshots.at(-1);
          // Compaction only rewrites: it never outputs more files than it read.
          expect(s.filesOut).toBeLessThanOrEqual(s.filesIn);
        }
        expectSame(cfg, await readRows(t), model, `seed ${seed} step ${step}`);
        if (snapshotId !== undefined) history.set(snapshotId, [...model]);
      }
      expect(await t.count()).toBe(model.length);
      // Every run exercises the rewrite: an explicit compaction's inputs, or the inline compaction a
      // write runs after its commit (with compaction.min.file-num 2 it may already have merged the
      // two files step 14 writes, leaving the full compaction nothing: seed 1388908671).
      const snapshots = await Promise.all((await t.snapshots.listIds()).map((id) => t.snapshots.read(id)));
      expect(compactedFiles + snapshots.filter((s) => s.commitKind === 'COMPACT').length).toBeGreaterThan(0);
      for (const [id, rows] of history)
        expectSame(cfg, await readRows(t, { snapshotId: id }), rows, `seed ${seed} time travel to ${id}`);

      // A stream from the first snapshot: every appended row, once, in order per bucket.
      const scan = new StreamScan(t, { mode: 'earliest' });
      const streamed: Row[] = [];
      for (let plan = await scan.plan(); plan; plan = await scan.plan()) {
        if (plan.snapshot.commitKind === 'APPEND') expect(plan.overwriteSkipped).toBeUndefined();
        for (const split of plan.splits) {
          const data = await readSplit(scan.table, split);
          expect(
            data
              .getChild('_VALUE_KIND')!
              .toArray()
              .every((k: number) => k === 0),
          ).toBe(true);
          streamed.push(...tableToRows(data, scan.table.schema.fields));
        }
      }
      expectSame(cfg, streamed, appended, `seed ${seed} stream`);
    });
  }
});
