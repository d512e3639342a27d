/**
 * varve's Iceberg export read by outside readers (issue 31 §5): pyiceberg (the reference Python
 * implementation, from its source) and icebird (npm), over randomized keyed and append tables
 * taking every commit kind — appends, upserts, deletes, `write --overwrite`, truncate,
 * drop-partition, `delete --where`, rescale, one-bucket and full compactions, add / rename /
 * widen column, expiry, orphan cleanup and rollback. After every step, every snapshot the
 * current Iceberg metadata lists (not seen before) is read by both readers at that snapshot:
 *   - they return the rows of the files the export lists for it: for an append table and a
 *     snapshot whose every bucket is fully compacted, that is `varve read --snapshot N`;
 *     for a keyed table otherwise, each bucket's highest level as of N (docs/ICEBERG.md);
 *   - when `sys iceberg` says `up_to_date`, the current Iceberg snapshot equals `varve read`.
 * A snapshot varve no longer has (expired, or replaced by a rollback) must still read (its files
 * are kept while the metadata lists it), and both readers must agree on it.
 * The deletion-vector workload runs twice: Iceberg format 2 (position delete files) and 3
 * (deletion vectors in varve's Puffin files). In format 3 the spec reader (read_iceberg.py --all)
 * reads every listed snapshot too and must equal pyiceberg, and icebird, which cannot read a
 * Puffin delete file, must fail on a snapshot with deletes rather than return other rows.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { tableToRows } from '../../lib/format/columns.js';
import { exportedFiles, usesDeletionVectors } from '../../lib/iceberg/export-entries.js';
import { commitUuidOf } from '../../lib/iceberg/export-history.js';
import { icebergLocation, readCurrentIcebergMetadata } from '../../lib/iceberg/iceberg-metadata.js';
import { icebergStatus } from '../../lib/iceberg/iceberg-status.js';
import { compactBucket, compactTable } from '../../lib/maintenance/compact.js';
import { expireSnapshots } from '../../lib/maintenance/expire-snapshots.js';
import { removeOrphanFiles } from '../../lib/maintenance/remove-orphans.js';
import { rollbackTo } from '../../lib/maintenance/rollback.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { parsePartitionPath } from '../../lib/schema/partition.js';
import { RowKind, type DataField, type Row } from '../../lib/schema/types.js';
import { LocalStore } from '../../lib/store/local-store.js';
import { readEntry } from '../../lib/table/read.js';
import type { Table } from '../../lib/table/table.js';
import { randomValue } from '../format/fixtures.js';
import { pythonWithPyarrow, runPython } from '../helpers/python-env.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import {
  canonicalValue,
  icebirdRows,
  lossyText,
  type PyicebergReader,
  snapshotColumnTypes,
  sortedRowTexts,
  type IcebergMetadataJson,
  type SnapshotRows,
} from './outside-readers.js';
import { pyicebergSession } from '../helpers/pyiceberg-session.js';

const dirs: string[] = [];
/** The pyiceberg reader, started once; undefined (after a loud line) when it cannot run outside CI. */
const reader = pyicebergSession('the outside Iceberg reader test');
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const PARTITIONS = ['eu', 'us/west', 'ünï=x'];
const COLUMNS =
  'id INT NOT NULL, region STRING NOT NULL, v BIGINT, amount DECIMAL(12,2), name STRING, day DATE, ts TIMESTAMP(6), score DOUBLE, w INT, flag BOOLEAN';

async function newTable(keyed: boolean, storage: string, deletionVectors = false, formatVersion = 2): Promise<Table> {
  const dir = mkdtempSync(join(tmpdir(), 'varve-outside-'));
  dirs.push(dir);
  return new FolderCatalog(new LocalStore(dir)).createTable(keyed ? 'db.keyed' : 'db.events', {
    fields: parseSchemaText(COLUMNS),
    primaryKeys: keyed ? ['region', 'id'] : [],
    partitionKeys: ['region'],
    options: {
      'metadata.iceberg.storage': storage,
      bucket: '2',
      ...(keyed ? { 'num-sorted-run.compaction-trigger': '4' } : { 'bucket-key': 'id' }),
      ...(deletionVectors ? { 'deletion-vectors.enabled': 'true' } : {}),
      'metadata.iceberg.format-version': String(formatVersion),
      'snapshot.num-retained.min': '3',
      'snapshot.num-retained.max': '8',
      'snapshot.time-retained': '1 ms',
    },
  });
}

function randomRows(r: Rng, fields: readonly DataField[], n: number): Row[] {
  return Array.from({ length: n }, () => {
    const row: Row = {};
    for (const f of fields)
      row[f.name] = f.name === 'id' ? r.int(0, 30) : f.name === 'region' ? r.pick(PARTITIONS) : randomValue(r, f);
    return row;
  });
}

/** One seeded workload: what each step does to the table, by name (the log printed on failure). */
class Workload {
  readonly log: string[] = [];
  private alters = ['add', 'rename', 'widen'];
  /** The snapshot of the last rescale (0: none). */
  private rescaledAt = 0;

  constructor(
    public table: Table,
    private readonly r: Rng,
  ) {}

  private get keyed(): boolean {
    return this.table.schema.primaryKeys.length > 0;
  }

  /** The steps, by name and weight (0: not possible on this table now). */
  private ops(): Array<[number, string, () => Promise<unknown>]> {
    return [
      [5, 'write', () => this.write()],
      [this.keyed ? 2 : 0, 'delete', () => this.deleteRows()],
      [1, 'overwrite', () => this.table.overwrite(randomRows(this.r, this.table.schema.fields, 6))],
      [0.3, 'truncate', () => this.table.truncate()],
      [1, 'drop-partition', () => this.dropPartition()],
      [1, 'delete-where', () => this.table.deleteWhere(`id < ${this.r.int(1, 12)}`)],
      [0.7, 'rescale', () => this.rescale()],
      [1, 'compact-bucket', () => this.compactOneBucket()],
      [1, 'compact-full', () => compactTable(this.table, { full: true })],
      [this.alters.length > 0 ? 0.8 : 0, 'alter', () => this.alter()],
      [0.7, 'expire', () => expireSnapshots(this.table, { now: Date.now() + 60_000 })],
      [0.4, 'remove-orphans', () => removeOrphanFiles(this.table, { olderThanMs: 0 })],
      [0.7, 'rollback', () => this.rollback()],
    ];
  }

  /**
   * `n` steps: first every kind once (each after a write, in a random order, the three alters
   * among them), then random ones by weight.
   */
  schedule(n: number): string[] {
    const kinds = this.ops()
      .filter(([w, name]) => w > 0 && name !== 'write')
      .flatMap(([, name]) => (name === 'alter' ? ['alter', 'alter', 'alter'] : [name]));
    for (let i = kinds.length - 1; i > 0; i--) {
      const j = this.r.int(0, i);
      [kinds[i], kinds[j]] = [kinds[j], kinds[i]];
    }
    const out = kinds.flatMap((k) => ['write', k]);
    const ops = this.ops();
    while (out.length < n) {
      let pick = this.r.next() * ops.reduce((sum, [w]) => sum + w, 0);
      out.push((ops.find(([w]) => (pick -= w) < 0) ?? ops[0])[1]);
    }
    return out;
  }

  /** Runs step `name` (one whose weight is 0 now writes instead). */
  async step(name: string): Promise<void> {
    const [w, , run] = this.ops().find((o) => o[1] === name)!;
    this.log.push(w > 0 ? name : 'write');
    const result = (await (w > 0 ? run : () => this.write())()) as
      | { compactionError?: Error; icebergExportError?: Error }
      | undefined;
    expect(result?.compactionError, `${name}: the export after it`).toBeUndefined();
    expect(result?.icebergExportError, `${name}: the export after it`).toBeUndefined();
  }

  private async write() {
    const rows = randomRows(this.r, this.table.schema.fields, this.r.int(1, 12));
    const kinds = rows.map(() =>
      this.keyed ? this.r.pick([RowKind.INSERT, RowKind.UPDATE_AFTER, RowKind.DELETE]) : RowKind.INSERT,
    );
    return this.table.write(rows, { kinds });
  }

  private async deleteRows() {
    const live = tableToRows(await this.table.read({ columns: ['region', 'id'] }), this.table.keyFields);
    const rows = live.filter(() => this.r.chance(0.3));
    if (rows.length === 0) return undefined;
    return this.table.write(rows, { kinds: rows.map(() => RowKind.DELETE) });
  }

  private async dropPartition() {
    const live = await readLiveFiles(this.table.store, this.table.path, (await this.table.snapshots.latest())!);
    if (live.length === 0) return undefined;
    const partition = this.r.pick(live).partition;
    return this.table.dropPartition({ region: parsePartitionPath(partition).region! });
  }

  private async compactOneBucket() {
    const latest = await this.table.snapshots.latest();
    const live = latest ? await readLiveFiles(this.table.store, this.table.path, latest) : [];
    if (live.length === 0) return undefined;
    const e = this.r.pick(live);
    return compactBucket(this.table, e.partition, e.bucket, { full: this.r.chance(0.5) });
  }

  private async alter() {
    const kind = this.alters.splice(this.r.int(0, this.alters.length - 1), 1)[0];
    const change =
      kind === 'add'
        ? { kind: 'add-column' as const, name: 'extra', type: { root: 'STRING' as const, nullable: true } }
        : kind === 'rename'
          ? { kind: 'rename-column' as const, from: 'name', to: 'label' }
          : { kind: 'update-column-type' as const, name: 'w', type: { root: 'BIGINT' as const, nullable: true } };
    this.table = (await this.table.alter([change])).table;
    this.log[this.log.length - 1] += `:${kind}`;
  }

  private async rescale() {
    const r = await this.table.rescale({ buckets: this.r.int(1, 3), force: true });
    this.rescaledAt = (await this.table.snapshots.latestId())!;
    return r;
  }

  private async rollback() {
    // Not to a snapshot before a rescale: varve then writes the partitions with the rescaled
    // bucket count into partitions the rollback gave their old one, and every later write fails
    // (CommitConflictError '... has 2 buckets ... written for 1 buckets'; seed 1967391477), a
    // rescale/rollback problem outside the Iceberg export, reported to be fixed there.
    const earliest = Math.max((await this.table.snapshots.earliestId())!, this.rescaledAt);
    const latest = (await this.table.snapshots.latestId())!;
    if (latest - earliest < 1) return undefined;
    const target = this.r.int(earliest, latest - 1);
    await rollbackTo(this.table, { snapshotId: target });
    this.log[this.log.length - 1] += `:${target}`;
    return undefined;
  }
}

/** The spec reader's (read_iceberg.py --all) rows of every snapshot the metadata at `key` lists. */
function specReaderRows(table: Table, key: string): Map<number, SnapshotRows> {
  const env = pythonWithPyarrow();
  if ('unavailable' in env) throw new Error(`the spec reader cannot run: ${env.unavailable}`);
  const folder = join((table.store as LocalStore).root, key.slice(0, key.lastIndexOf('/')));
  const out = JSON.parse(runPython(env.python, 'test/iceberg/read_iceberg.py', [folder, '--all'])) as {
    snapshots: Record<string, { rows: Array<Record<string, string | null>> }>;
  };
  return new Map(
    Object.entries(out.snapshots).map(([id, s]) => {
      const columns = s.rows.length > 0 ? Object.keys(s.rows[0]) : [];
      return [Number(id), { columns, rows: s.rows.map((r) => columns.map((c) => r[c])) }];
    }),
  );
}

/** Rows of `table` at snapshot `id` (time travel: the snapshot's own schema) as canonical rows. */
function varveSnapshotRows(fields: readonly DataField[], t: Parameters<typeof tableToRows>[0]): SnapshotRows {
  const rows = tableToRows(t, [...fields]);
  return { columns: fields.map((f) => f.name), rows: rows.map((r) => fields.map((f) => canonicalValue(f, r[f.name]))) };
}

/** What Iceberg readers must see at varve snapshot `id`: the rows of the files the export lists (exact: they are all its live files). */
async function expectedAt(
  table: Table,
  id: number,
): Promise<{ rows: SnapshotRows; exact: boolean; read: SnapshotRows }> {
  const snapshot = (await table.snapshots.tryReadFresh(id))!;
  const at = table.withSchema(await table.schemaById(snapshot.schemaId));
  const fields = at.schema.fields;
  const live = await readLiveFiles(table.store, table.path, snapshot);
  if (usesDeletionVectors(at)) {
    // Every live file minus its deletion vector: exactly varve's rows.
    const read = varveSnapshotRows(fields, await table.read({ snapshotId: id }));
    return { rows: read, exact: true, read };
  }
  const exported = exportedFiles(at, live);
  const rows: SnapshotRows = { columns: fields.map((f) => f.name), rows: [] };
  for (const e of exported) rows.rows.push(...varveSnapshotRows(fields, await readEntry(at, e)).rows);
  const read = varveSnapshotRows(fields, await table.read({ snapshotId: id }));
  return { rows, exact: exported.length === live.length, read };
}

interface Checked {
  snapshots: number;
  exact: number;
  upToDate: number;
  gone: number;
}

/** Reads every listed Iceberg snapshot not seen before (and the current one) with both readers and compares. */
async function checkExport(
  py: PyicebergReader,
  table: Table,
  seen: Set<string>,
  counts: Checked,
  log: string[],
): Promise<void> {
  const loc = icebergLocation(table)!;
  const current = await readCurrentIcebergMetadata(table.store, loc);
  if (current === undefined) return;
  const metadata = current.metadata as unknown as IcebergMetadataJson;
  const root = (table.store as LocalStore).root;
  const ids = metadata.snapshots
    .filter(
      (s) =>
        s['snapshot-id'] === metadata['current-snapshot-id'] ||
        !seen.has(`${s['snapshot-id']}@${s.summary['varve.commit-uuid']}`),
    )
    .map((s) => s['snapshot-id']);
  const py_ = await py.read(join(root, current.key), ids);
  const spec = metadata['format-version'] === 3 ? specReaderRows(table, current.key) : undefined;
  for (const id of ids) {
    const s = metadata.snapshots.find((x) => x['snapshot-id'] === id)!;
    const what = `Iceberg snapshot ${id} of ${current.key} after ${log.join(' ')}`;
    seen.add(`${id}@${s.summary['varve.commit-uuid']}`);
    const types = snapshotColumnTypes(metadata, id);
    const lossy = (c: string, t: string | null) => lossyText(types.get(c)!, t);
    const pyRows = py_.get(id)!;
    if (spec !== undefined)
      expect(sortedRowTexts(spec.get(id)!), `${what}: spec reader = pyiceberg`).toEqual(sortedRowTexts(pyRows));
    // icebird 0.3.1 reads delete files as Parquet: on a v3 deletion vector (Puffin) it must fail.
    const puffin = spec !== undefined && s.summary['total-delete-files'] !== '0';
    const birdRows = await icebirdRows(loc.tableUri, metadata, id).catch((e: Error) => {
      if (puffin) return undefined;
      throw e;
    });
    if (birdRows !== undefined)
      expect(sortedRowTexts(birdRows), `${what}: icebird = pyiceberg`).toEqual(sortedRowTexts(pyRows, lossy));
    const varve = await table.snapshots.tryReadFresh(id);
    if (varve === undefined || commitUuidOf(varve) !== s.summary['varve.commit-uuid']) {
      counts.gone++;
      continue;
    }
    const expected = await expectedAt(table, id);
    expect(sortedRowTexts(pyRows), `${what}: pyiceberg = the exported files`).toEqual(sortedRowTexts(expected.rows));
    if (expected.exact) {
      expect(sortedRowTexts(pyRows), `${what}: pyiceberg = varve read --snapshot ${id}`).toEqual(
        sortedRowTexts(expected.read),
      );
      counts.exact++;
    }
    counts.snapshots++;
  }
  const status = await icebergStatus(table);
  if (status.up_to_date) {
    const latest = (await table.snapshots.latest())!;
    const fields = (await table.latest()).schema.fields;
    const now = varveSnapshotRows(fields, await (await table.latest()).read());
    expect(
      sortedRowTexts(py_.get(metadata['current-snapshot-id'])!),
      `up_to_date after ${log.join(' ')}: pyiceberg = varve read (snapshot ${latest.id})`,
    ).toEqual(sortedRowTexts(now));
    counts.upToDate++;
  }
}

async function runWorkload(
  keyed: boolean,
  storage: string,
  steps: number,
  ctx: { skip: () => void },
  deletionVectors = false,
  formatVersion = 2,
) {
  const py = reader();
  if (py === undefined) return ctx.skip();
  const kind = deletionVectors ? `deletion-vectors${formatVersion === 3 ? '-v3' : ''}` : keyed ? 'keyed' : 'append';
  const seed = testSeed(`iceberg.outside-readers.${kind}`);
  const r = rng(seed);
  const w = new Workload(await newTable(keyed, storage, deletionVectors, formatVersion), r);
  const seen = new Set<string>();
  const counts: Checked = { snapshots: 0, exact: 0, upToDate: 0, gone: 0 };
  for (const name of w.schedule(steps)) {
    await w.step(name).catch((e: Error) => {
      throw new Error(`seed ${seed}, step ${w.log.length} of ${w.log.join(' ')}: ${e.message}`, { cause: e });
    });
    await checkExport(py, w.table, seen, counts, w.log);
  }
  console.log(`seed ${seed}: ${w.log.join(' ')} — ${JSON.stringify(counts)}`);
  // Every kind of check ran: snapshots compared with varve's files, some exactly with varve read.
  expect(counts.snapshots).toBeGreaterThan(w.log.length / 2);
  expect(counts.exact).toBeGreaterThan(0);
  expect(counts.upToDate).toBeGreaterThan(0);
  // With deletion vectors every commit exports, so Iceberg readers see varve's latest after each step.
  if (deletionVectors) expect(counts.upToDate).toBe(w.log.length);
}

describe('the Iceberg export read by pyiceberg and icebird', () => {
  it('an append table: every exported snapshot is varve read --snapshot, through every commit kind', {
    timeout: 600_000,
  }, async (ctx) => {
    await runWorkload(false, 'table-location', 30, ctx);
  });

  it('a keyed table: every exported snapshot is its files as listed, and varve read when fully compacted', {
    timeout: 600_000,
  }, async (ctx) => {
    await runWorkload(true, 'warehouse', 30, ctx);
  });

  it('a deletion-vector table: every exported snapshot is varve read --snapshot, through every commit kind', {
    timeout: 600_000,
  }, async (ctx) => {
    await runWorkload(true, 'table-location', 30, ctx, true);
  });

  it('a deletion-vector table in Iceberg format 3: every exported snapshot is varve read --snapshot, in pyiceberg and the spec reader', {
    timeout: 600_000,
  }, async (ctx) => {
    await runWorkload(true, 'warehouse', 30, ctx, true, 3);
  });

  it('an overwrite removes the overwritten rows for pyiceberg', { timeout: 300_000 }, async (ctx) => {
    // Prepare
    const py = reader();
    if (py === undefined) return ctx.skip();
    const table = await newTable(false, 'table-location');
    const row = (id: number, region: string) => ({
      id,
      region,
      v: BigInt(id),
      amount: null,
      name: `n${id}`,
      day: null,
      ts: null,
      score: null,
      w: null,
      flag: null,
    });
    await table.write([row(1, 'eu'), row(2, 'eu'), row(3, 'us/west')]);
    const ids = async () => {
      const m = (await readCurrentIcebergMetadata(table.store, icebergLocation(table)!))!;
      const rows = (await py.read(join((table.store as LocalStore).root, m.key), [m.metadata['current-snapshot-id']]))
        .values()
        .next().value!;
      const i = rows.columns.indexOf('id');
      return rows.rows.map((r) => Number(r[i])).sort((a, b) => a - b);
    };
    expect(await ids()).toEqual([1, 2, 3]);
    // Act + Assess: a dynamic overwrite of eu replaces eu's rows only
    await table.overwrite([row(7, 'eu')]);
    expect(await ids()).toEqual([3, 7]);
    // a whole-table overwrite, a drop-partition and a truncate
    await table.overwrite([row(8, 'us/west'), row(9, 'eu')], { dynamicPartitionOverwrite: false });
    expect(await ids()).toEqual([8, 9]);
    await table.dropPartition({ region: 'eu' });
    expect(await ids()).toEqual([8]);
    await table.truncate();
    expect(await ids()).toEqual([]);
  });
});
