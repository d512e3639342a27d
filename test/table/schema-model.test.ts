/**
 * Randomized model test of schema evolution: seeded sequences of writes (upserts and deletes),
 * random alters (add, rename, drop, widen), compactions, rollbacks and a stream that follows the
 * table, compared with an in-memory model that keeps values by field id. After every step the
 * latest read equals the model in the table's current schema (a rollback keeps the schema, as
 * Paimon's does: the rolled-back state's files are read by field id into the current columns, and
 * writes after it use the same columns); at the end every snapshot left (time travel, with its own
 * schema) equals the model's history, and the stream folded into a state equals the final model.
 */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { tableToRows } from '../../lib/format/columns.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { rollbackTo } from '../../lib/maintenance/rollback.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import type { SchemaChange } from '../../lib/schema/schema-evolution.js';
import { RowKind, type DataField, type Row, type TypeRoot, type Value } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { kindsOf, readSplit } from '../../lib/stream/split.js';
import { StreamScan } from '../../lib/stream/stream-scan.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';

interface ModelColumn {
  id: number;
  name: string;
  root: TypeRoot;
}
/** Key → value by field id. */
type ModelState = Map<number, Map<number, Value>>;

function randomValue(r: Rng, root: TypeRoot): Value {
  if (r.chance(0.15)) return null;
  switch (root) {
    case 'INT':
      return r.int(-1000, 1000);
    case 'BIGINT':
      return BigInt(r.int(-1000, 1000)) * 1_000_000_007n;
    case 'FLOAT':
    case 'DOUBLE':
      return r.int(-200, 200) / 2; // exact in float32
    default:
      return `s${r.int(0, 99)}`;
  }
}

/** The model's rows under `columns`, as comparable JSON text sorted by key. */
function render(state: ModelState, columns: ModelColumn[]): string[] {
  return [...state.entries()]
    .sort(([a], [b]) => a - b)
    .map(([k, values]) =>
      JSON.stringify({ id: k, ...Object.fromEntries(columns.map((c) => [c.name, show(values.get(c.id) ?? null)])) }),
    );
}

function show(v: Value): unknown {
  return typeof v === 'bigint' ? `${v}n` : v;
}

function renderRows(rows: Row[]): string[] {
  return rows
    .sort((a, b) => (a.id as number) - (b.id as number))
    .map((row) => JSON.stringify(Object.fromEntries(Object.entries(row).map(([k, v]) => [k, show(v)]))));
}

/** The rows a read returns, rendered: time travel in the snapshot's schema, the latest in the newer of the handle's and the snapshot's. */
async function readRendered(table: Table, snapshotId?: number): Promise<string[]> {
  const t = await table.read({ snapshotId });
  const snapshot = await table.snapshotFor({ snapshotId });
  const travels = snapshotId !== undefined;
  const fields =
    snapshot && (travels || snapshot.schemaId > table.schema.id)
      ? (await table.schemaById(snapshot.schemaId)).fields
      : table.schema.fields;
  return renderRows(tableToRows(t, fields));
}

/** The model's state at a snapshot, as the current columns see it: dropped columns gone, widened values widened. */
function projectState(state: ModelState, columns: ModelColumn[]): ModelState {
  const out: ModelState = new Map();
  for (const [k, values] of state) {
    out.set(
      k,
      new Map(
        columns.map((c) => {
          const v = values.get(c.id) ?? null;
          return [c.id, c.root === 'BIGINT' && typeof v === 'number' ? BigInt(v) : v];
        }),
      ),
    );
  }
  return out;
}

function copyState(state: ModelState): ModelState {
  return new Map([...state].map(([k, v]) => [k, new Map(v)]));
}

describe('schema evolution model test', () => {
  it('random writes, alters, compactions, time travel and a stream equal the model', async () => {
    const seed = testSeed('schema-model');
    const r = rng(seed);
    const catalog = new FolderCatalog(new MemoryStore());
    let table = await catalog.createTable('db.t', {
      fields: parseSchemaText('id INT NOT NULL, a INT, b STRING, c FLOAT'),
      primaryKeys: ['id'],
      options: { bucket: '2', 'num-sorted-run.compaction-trigger': '3' },
    });
    let columns: ModelColumn[] = [
      { id: 1, name: 'a', root: 'INT' },
      { id: 2, name: 'b', root: 'STRING' },
      { id: 3, name: 'c', root: 'FLOAT' },
    ];
    let nextName = 0;
    const model: ModelState = new Map();
    const history = new Map<number, { columns: ModelColumn[]; rows: string[]; state: ModelState }>();
    let scan = new StreamScan(table, { mode: 'earliest' });
    const streamed: ModelState = new Map();
    const drainStream = async () => {
      for (let plan = await scan.plan(); plan; plan = await scan.plan()) {
        const fields: DataField[] = scan.table.schema.fields;
        for (const split of plan.splits) {
          const data = await readSplit(scan.table, split);
          const kinds = kindsOf(data);
          tableToRows(data, fields).forEach((row, i) => {
            if (kinds[i] === RowKind.DELETE || kinds[i] === RowKind.UPDATE_BEFORE) streamed.delete(row.id as number);
            else
              streamed.set(
                row.id as number,
                new Map(fields.filter((f) => f.name !== 'id').map((f) => [f.id, row[f.name]])),
              );
          });
        }
      }
    };
    const where = (step: number, what: string) => `step ${step} (${what}), seed ${seed}`;

    for (let step = 0; step < 30; step++) {
      const op = r.next();
      let what: string;
      let snapshotId: number | undefined;
      if (op >= 0.9 && history.size > 0) {
        // Back to a random snapshot: its rows, in the current columns (the schema stays).
        const target = r.pick([...history.keys()]);
        what = `rollback to ${target}`;
        table = await table.latest();
        await rollbackTo(table, { snapshotId: target });
        const kept = projectState(history.get(target)!.state, columns);
        model.clear();
        for (const [k, v] of kept) model.set(k, v);
        // The undone snapshots stay in the history: time travel still reads them (checked at the end).
        // Streams skip a rollback (an OVERWRITE; the undone snapshots stay in the history): a stream
        // that had read undone snapshots cannot fold into the rolled-back state, so start one from it.
        scan = new StreamScan(table, { mode: 'latest-full' });
        streamed.clear();
      } else if (op < 0.5) {
        what = 'write';
        const rows: Row[] = [];
        const kinds: number[] = [];
        const seen = new Set<number>();
        for (let i = r.int(1, 12); i > 0; i--) {
          const id = r.int(1, 30);
          if (seen.has(id)) continue;
          seen.add(id);
          const del = model.has(id) && r.chance(0.2);
          // Rows follow the writing handle's schema, which may be older than the table's: the
          // write then fails with SchemaChangedError and Table.write maps them by field id.
          const row: Row = { id };
          for (const f of table.schema.fields)
            if (f.name !== 'id') row[f.name] = del ? null : randomValue(r, f.type.root);
          rows.push(row);
          kinds.push(del ? RowKind.DELETE : RowKind.INSERT);
          if (del) model.delete(id);
          else {
            const byId = new Map(table.schema.fields.map((f) => [f.id, row[f.name]]));
            model.set(
              id,
              new Map(
                columns.map((c) => {
                  const v = byId.get(c.id) ?? null;
                  return [c.id, c.root === 'BIGINT' && typeof v === 'number' ? BigInt(v) : v];
                }),
              ),
            );
          }
        }
        snapshotId = (await table.write(rows, { kinds })).snapshot?.id;
      } else if (op < 0.78) {
        const changes: SchemaChange[] = [];
        const kind = r.int(0, 3);
        const widenable = columns.filter((c) => c.root === 'INT' || c.root === 'FLOAT');
        if (kind === 0 || columns.length < 2) {
          const root = r.pick(['INT', 'FLOAT', 'STRING'] as const);
          const name = `n${nextName++}`;
          changes.push({ kind: 'add-column', name, type: { root, nullable: true } });
          columns = [...columns, { id: -1, name, root }];
        } else if (kind === 1) {
          const c = r.pick(columns);
          const name = `r${nextName++}`;
          changes.push({ kind: 'rename-column', from: c.name, to: name });
          columns = columns.map((x) => (x === c ? { ...x, name } : x));
        } else if (kind === 2) {
          const c = r.pick(columns);
          changes.push({ kind: 'drop-column', name: c.name });
          columns = columns.filter((x) => x !== c);
          for (const values of model.values()) values.delete(c.id);
        } else if (widenable.length > 0) {
          const c = r.pick(widenable);
          const root = c.root === 'INT' ? 'BIGINT' : 'DOUBLE';
          changes.push({ kind: 'update-column-type', name: c.name, type: { root, nullable: true } });
          columns = columns.map((x) => (x === c ? { ...x, root } : x));
          if (root === 'BIGINT')
            for (const values of model.values())
              if (typeof values.get(c.id) === 'number') values.set(c.id, BigInt(values.get(c.id) as number));
        } else {
          changes.push({ kind: 'set-option', key: 'snapshot.num-retained.min', value: String(r.int(5, 20)) });
        }
        what = `alter ${JSON.stringify(changes)}`;
        const result = await table.alter(changes);
        // The model learns the new column's id from the schema (ids are the table's to assign).
        columns = columns.map((c) =>
          c.id === -1 ? { ...c, id: result.schema.fields.find((f) => f.name === c.name)!.id } : c,
        );
        if (r.chance(0.5)) table = result.table; // else: the stale handle must cope by itself
        snapshotId = result.snapshot?.id;
      } else {
        what = 'compact';
        const summary = await compactTable(table, { full: r.chance(0.5) });
        snapshotId = summary.snapshots.at(-1);
      }
      const expected = render(model, columns);
      expect(await readRendered(table), where(step, what)).toEqual(expected);
      if (snapshotId !== undefined)
        history.set(snapshotId, { columns: [...columns], rows: expected, state: copyState(model) });
      if (r.chance(0.3)) await drainStream();
    }
    for (const [id, h] of history) {
      expect(await readRendered(table, id), `time travel to snapshot ${id}, seed ${seed}`).toEqual(h.rows);
    }
    await drainStream();
    // The stream reads the latest snapshot in the schema it was written under (after a rollback with no write since, an older one).
    expect(scan.table.schema.id, `seed ${seed}`).toBe((await table.snapshots.latest())!.schemaId);
    // Rows streamed before a widening hold the narrow value; the stream's reader widens them itself.
    for (const values of streamed.values())
      for (const c of columns)
        if (c.root === 'BIGINT' && typeof values.get(c.id) === 'number')
          values.set(c.id, BigInt(values.get(c.id) as number));
    expect(render(streamed, columns), `stream folded into a state, seed ${seed}`).toEqual(render(model, columns));
  });
});
