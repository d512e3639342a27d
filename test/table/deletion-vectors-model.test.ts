/**
 * Deletion vectors are exact at EVERY snapshot (DV-CONTRACT.md): a randomized model test per merge
 * engine (deduplicate, deduplicate with a sequence.field, first-row) — upserts, deletes, two
 * writers on one warehouse committing at once (one loses the race and plans its vectors again on
 * the winner's snapshot), one-bucket and full compactions (also racing a write), overwrites,
 * rollbacks. After
 * every step, every new snapshot is read merge-free (readTable and scanTable) and merged with the
 * vectors ignored, and both equal the model of that snapshot.
 */
import * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { tableToRows } from '../../lib/format/columns.js';
import { readDeletionIndex } from '../../lib/manifest/deletion-index.js';
import { compactBucket, compactTable } from '../../lib/maintenance/compact.js';
import { rollbackTo } from '../../lib/maintenance/rollback.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { RowKind, type Row } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { scanTable } from '../../lib/table/scan.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';

type State = Map<string, { v: bigint | null; t: bigint }>;

interface Engine {
  name: string;
  options: Record<string, string>;
  deletes: boolean;
  /** Applies one record (in commit order) to the model. */
  apply(state: State, key: string, kind: number, v: bigint | null, t: bigint): void;
}

const ENGINES: Engine[] = [
  {
    name: 'deduplicate',
    options: {},
    deletes: true,
    apply: (s, key, kind, v, t) => (kind === RowKind.DELETE ? void s.delete(key) : void s.set(key, { v, t })),
  },
  {
    name: 'deduplicate with sequence.field',
    options: { 'sequence.field': 't' },
    // No deletes: a full compaction drops a retraction, and with it the sequence value an older
    // version would have to beat (Paimon's semantics), which this model does not follow.
    deletes: false,
    // The largest t wins; a later commit wins a tie.
    apply: (s, key, _kind, v, t) => {
      const cur = s.get(key);
      if (cur === undefined || t >= cur.t) s.set(key, { v, t });
    },
  },
  {
    name: 'first-row',
    options: { 'merge-engine': 'first-row', 'ignore-delete': 'true' },
    deletes: true,
    apply: (s, key, kind, v, t) => {
      if (kind !== RowKind.DELETE && !s.has(key)) s.set(key, { v, t });
    },
  },
];

function copyState(s: State): State {
  return new Map(s);
}

const REGIONS = ['eu', 'us'];

/** A batch of distinct keys. */
function genBatch(r: Rng, engine: Engine, n = r.int(1, 30)): Array<{ row: Row; kind: number }> {
  const seen = new Set<string>();
  const out: Array<{ row: Row; kind: number }> = [];
  for (let i = 0; i < n; i++) {
    const id = r.int(1, 60);
    const region = r.pick(REGIONS);
    if (seen.has(`${region}|${id}`)) continue;
    seen.add(`${region}|${id}`);
    const del = engine.deletes && r.chance(0.2);
    out.push({
      row: { id, region, v: r.chance(0.1) ? null : BigInt(r.int(-50, 100)), t: BigInt(r.int(0, 9)) },
      kind: del ? RowKind.DELETE : RowKind.INSERT,
    });
  }
  return out;
}

function applyBatch(engine: Engine, state: State, batch: Array<{ row: Row; kind: number }>): void {
  for (const b of batch)
    engine.apply(state, `${b.row.region}|${b.row.id}`, b.kind, b.row.v as bigint | null, b.row.t as bigint);
}

function rowsOf(table: Table, t: arrow.Table): string[] {
  return tableToRows(t, table.schema.fields)
    .map((row) => `${row.region}|${row.id}=${row.v},${row.t}`)
    .sort();
}

function modelRows(s: State): string[] {
  return [...s.entries()].map(([k, { v, t }]) => `${k}=${v},${t}`).sort();
}

async function scanned(table: Table, snapshotId: number): Promise<arrow.Table> {
  const batches: arrow.RecordBatch[] = [];
  for await (const b of scanTable(table, { snapshotId, batchRows: 7 })) batches.push(b);
  return new arrow.Table(batches);
}

describe('deletion vectors: exact at every snapshot', () => {
  for (const engine of ENGINES) {
    it(`${engine.name}: merge-free reads equal merged reads and the model at every snapshot`, async () => {
      const seed = testSeed(`deletion-vectors-model/${engine.name}`);
      const r = rng(seed);
      const store = new MemoryStore();
      const catalog = new FolderCatalog(store);
      const options = {
        bucket: '2',
        'deletion-vectors.enabled': 'true',
        'num-sorted-run.compaction-trigger': '4',
        ...engine.options,
      };
      const a = await catalog.createTable('db.t', {
        fields: parseSchemaText('id INT NOT NULL, region STRING NOT NULL, v BIGINT, t BIGINT NOT NULL'),
        primaryKeys: ['region', 'id'],
        partitionKeys: ['region'],
        options,
      });
      // A second writer: another catalog and table handle on the same warehouse.
      const b = await new FolderCatalog(store).getTable('db.t');
      let model: State = new Map();
      const history = new Map<number, State>([[0, new Map()]]);
      let checked = 0;
      let vectorsSeen = 0;
      const record = (id: number) => history.set(id, copyState(model));
      const modelAt = (id: number) => history.get(Math.max(...[...history.keys()].filter((k) => k <= id)))!;
      const check = async (step: string) => {
        const latest = await a.snapshots.latest();
        if (latest === undefined) return;
        for (let id = checked + 1; id <= latest.id; id++) {
          const snap = (await a.snapshots.tryRead(id))!;
          expect(snap.deletionVectors, `snapshot ${id} has a deletion-vector index (seed ${seed})`).toBeDefined();
          vectorsSeen += (await readDeletionIndex(a.store, a.path, snap)).length;
          const merged = rowsOf(a, await a.read({ snapshotId: id, ignoreDeletionVectors: true }));
          const where = `${step}, snapshot ${id} (seed ${seed})`;
          expect(merged, `merged read = model at ${where}`).toEqual(modelRows(modelAt(id)));
          expect(rowsOf(a, await a.read({ snapshotId: id })), `merge-free read = merged read at ${where}`).toEqual(
            merged,
          );
          expect(rowsOf(a, await scanned(a, id)), `merge-free scan = merged read at ${where}`).toEqual(merged);
        }
        checked = latest.id;
      };
      for (let step = 0; step < 30; step++) {
        const roll = r.next();
        if (roll < 0.45) {
          const batch = genBatch(r, engine);
          const res = await r.pick([a, b]).write(
            batch.map((x) => x.row),
            { kinds: batch.map((x) => x.kind as 0) },
          );
          applyBatch(engine, model, batch);
          if (res.snapshot) record(res.snapshot.id);
        } else if (roll < 0.65) {
          // Two writers at once: their batches land in snapshot order.
          const batches = [genBatch(r, engine), genBatch(r, engine)];
          const results = await Promise.all([
            a.write(
              batches[0].map((x) => x.row),
              { kinds: batches[0].map((x) => x.kind as 0) },
            ),
            b.write(
              batches[1].map((x) => x.row),
              { kinds: batches[1].map((x) => x.kind as 0) },
            ),
          ]);
          const order = [0, 1].sort((x, y) => (results[x].snapshot?.id ?? 0) - (results[y].snapshot?.id ?? 0));
          for (const i of order) {
            applyBatch(engine, model, batches[i]);
            if (results[i].snapshot) record(results[i].snapshot!.id);
          }
        } else if (roll < 0.8) {
          const full = r.chance(0.5);
          if (r.chance(0.5)) await compactTable(a, { full });
          else await compactBucket(a, `region=${r.pick(REGIONS)}`, r.int(0, 1), { full });
        } else if (roll < 0.9) {
          // A compaction racing a write: the write may land after the compaction's base.
          const batch = genBatch(r, engine);
          const [, res] = await Promise.all([
            compactTable(a, { full: r.chance(0.5) }),
            b.write(
              batch.map((x) => x.row),
              { kinds: batch.map((x) => x.kind as 0) },
            ),
          ]);
          applyBatch(engine, model, batch);
          if (res.snapshot) record(res.snapshot.id);
        } else if (roll < 0.95 && checked > 1) {
          // A rollback (a forward commit holding an earlier snapshot's files and vectors).
          const target = r.int(1, checked - 1);
          await rollbackTo(a, { snapshotId: target });
          model = copyState(modelAt(target));
          const latest = await a.snapshots.latest();
          if (latest) record(latest.id);
        } else {
          // Overwrite of the partitions the rows go to.
          const batch = genBatch(r, { ...engine, deletes: false }, r.int(1, 10));
          const res = await a.overwrite(batch.map((x) => x.row));
          const regions = new Set(batch.map((x) => x.row.region));
          const kept = copyState(model);
          for (const k of [...kept.keys()]) if (regions.has(k.split('|')[0])) kept.delete(k);
          model = kept;
          applyBatch(engine, model, batch);
          if (res.snapshot) record(res.snapshot.id);
        }
        await check(`step ${step}`);
      }
      expect(vectorsSeen, `some snapshot had deletion vectors (seed ${seed})`).toBeGreaterThan(0);
    }, 240_000);
  }
});
