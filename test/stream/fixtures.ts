/**
 * Small factories for stream tests: a table on a memory warehouse, writes of (k, v) rows, a
 * change collector, and the model that replays changes into a key → value map.
 */
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { tableToRows } from '../../lib/format/columns.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { RowKind, type RowKindByte } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { ObjectStore } from '../../lib/store/object-store.js';
import type { ChangeBatch, StreamSink } from '../../lib/stream/delivery.js';
import { discover, type DiscoveryOptions } from '../../lib/stream/discovery.js';
import type { SplitReader } from '../../lib/stream/reader.js';
import type { SplitQueue } from '../../lib/stream/split-queue.js';
import { changesOf, type Change } from '../../lib/stream/sinks.js';
import { readSplit } from '../../lib/stream/split.js';
import type { StreamScan } from '../../lib/stream/stream-scan.js';
import type { Table } from '../../lib/table/table.js';

/** A `(k BIGINT, v STRING)` table keyed by k on a fresh memory warehouse (or `store`). */
export async function makeTable(
  options: Record<string, string> = {},
  opts: { store?: ObjectStore; name?: string; partitioned?: boolean } = {},
): Promise<Table> {
  const catalog = new FolderCatalog(opts.store ?? new MemoryStore());
  return catalog.createTable(opts.name ?? 'db.t', {
    fields: parseSchemaText(opts.partitioned ? 'p STRING, k BIGINT, v STRING' : 'k BIGINT, v STRING'),
    primaryKeys: opts.partitioned ? ['p', 'k'] : ['k'],
    partitionKeys: opts.partitioned ? ['p'] : [],
    options: { bucket: '2', ...options },
  });
}

/** Upserts (or deletes, with `delete: true`) keys with values; one commit. */
export async function put(
  table: Table,
  entries: Array<[number, string | null]>,
  opts: { delete?: boolean; p?: string } = {},
): Promise<number> {
  const rows = entries.map(([k, v]) => ({ ...(opts.p !== undefined ? { p: opts.p } : {}), k: BigInt(k), v }));
  const kinds = entries.map(() => (opts.delete ? RowKind.DELETE : RowKind.INSERT)) as RowKindByte[];
  const r = await table.write(rows, { kinds });
  return r.snapshot!.id;
}

/** A change reduced to what tests compare: `+I 1=a`. */
export function show(c: Change): string {
  const p = c.row.p !== undefined ? `${String(c.row.p)}/` : '';
  return `${c.kind} ${p}${String(c.row.k)}=${c.row.v === null ? 'null' : String(c.row.v)}`;
}

/** Every change a StreamScan yields until it is caught up, as `show` strings (with the snapshot when asked). */
export async function drain(scan: StreamScan, table: Table, withSnapshot = false): Promise<string[]> {
  const out: string[] = [];
  for (;;) {
    const plan = await scan.plan();
    if (!plan) return out;
    for (const split of plan.splits) {
      const data = await readSplit(table, split);
      for (const c of changesOf(batchOf(table, split.snapshotId, split.partition, split.bucket, data))) {
        out.push(withSnapshot ? `${c.snapshot}: ${show(c)}` : show(c));
      }
    }
  }
}

/** A ChangeBatch for tests that read splits themselves. */
export function batchOf(
  table: Table,
  snapshotId: number,
  partition: string,
  bucket: number,
  data: ChangeBatch['data'],
): ChangeBatch {
  return {
    table,
    consumerId: 'test',
    snapshotId,
    partition,
    bucket,
    kind: 'delta',
    data,
    splitId: `test/${snapshotId}/${partition}/${bucket}`,
  };
}

/** A sink that records every change it is given (and can be told to fail). */
export class RecordingSink implements StreamSink {
  readonly changes: Change[] = [];
  readonly batches: ChangeBatch[] = [];
  failNext: (batch: ChangeBatch) => boolean = () => false;

  async write(batch: ChangeBatch): Promise<void> {
    if (this.failNext(batch)) throw new Error(`sink failure injected for ${batch.splitId}`);
    this.batches.push(batch);
    this.changes.push(...changesOf(batch));
  }
}

/** The key → value state a sequence of changes leads to (the stream "replayed"). */
export function replay(changes: Change[]): Map<string, string | null> {
  const state = new Map<string, string | null>();
  for (const c of changes) {
    const key = `${c.row.p ?? ''}/${String(c.row.k)}`;
    if (c.kind === '-D' || c.kind === '-U') state.delete(key);
    else state.set(key, c.row.v as string | null);
  }
  return state;
}

/** The table's merged state at its latest snapshot, as a key → value map. */
export async function stateOf(table: Table): Promise<Map<string, string | null>> {
  const rows = tableToRows(await table.read(), table.schema.fields);
  return new Map(rows.map((r) => [`${r.p ?? ''}/${String(r.k)}`, r.v as string | null]));
}

/** Runs discovery and the reader until everything committed is delivered (or `maxRounds` pass). */
export async function pump(
  table: Table,
  queue: SplitQueue,
  reader: SplitReader,
  consumerId: string,
  opts: DiscoveryOptions & { maxRounds?: number } = {},
): Promise<void> {
  for (let round = 0; round < (opts.maxRounds ?? 10_000); round++) {
    const d = await discover(table, queue, consumerId, opts);
    await reader.poll({ waitMs: 2 });
    const depth = await queue.depth();
    if (d.caughtUp && depth.visible === 0 && depth.inFlight === 0) {
      const again = await discover(table, queue, consumerId, opts);
      if (again.caughtUp && again.sent === 0) return;
    }
  }
  throw new Error(`pump: not caught up after ${opts.maxRounds ?? 10_000} rounds`);
}
