/**
 * Where a written row goes: its partition path and its bucket. A partition's bucket count is
 * learned once per writer (an existing partition keeps the count its files were written for); a
 * bulk table's bucket numbers are hashed straight from its key column when it allows.
 */
import type * as arrow from 'apache-arrow';
import { findPartitionTotalBuckets, readDataManifests } from '../manifest/scan.js';
import { chunkOfData } from '../mergetree/column-access.js';
import { bucketOf, bucketOfInt32, bucketOfInt64Words } from '../schema/bucket.js';
import { partitionPath } from '../schema/partition.js';
import { bucketSummaryOf, summaryTotalBuckets } from '../snapshot/bucket-summary.js';
import type { DataField, DataType, Value } from '../schema/types.js';
import type { Table } from './table.js';

/** The columns a row's bucket is hashed from: `bucket-key`, else the primary key less the partition keys, else the whole primary key. */
export function bucketKeyFields(table: Table): DataField[] {
  const s = table.schema;
  const byName = (n: string) => s.fields.find((f) => f.name === n)!;
  const configured = table.options.bucketKey;
  const names = configured.length ? configured : s.primaryKeys.filter((k) => !s.partitionKeys.includes(k));
  return (names.length > 0 ? names : s.primaryKeys).map(byName);
}

/**
 * How long the newest snapshot a table's committer knows routes new partitions without a look for
 * a newer one: a warm function container keeps its snapshot manager for its lifetime, and would
 * otherwise route by the bucket counts of its first lookup until it died, every batch after a
 * rescale refused (the bound of a warm container's schema, lib/aws/tables.ts, for the same reason).
 */
const ROUTING_VIEW_MS = 60_000;

/** True when snapshot `id + 1` was seen missing (or `id` made here) less than ROUTING_VIEW_MS ago. */
function knownRecently(t: Table, id: number): boolean {
  const since = t.commitSnapshots.nextAbsentSince(id);
  return since !== undefined && performance.now() - since < ROUTING_VIEW_MS;
}

/** See the file comment. */
export class RowRouter {
  readonly partitionFields: DataField[];
  readonly bucketFields: DataField[];
  /** The table's bucket count (1 for a bucket-unaware append table). */
  readonly numBuckets: number;
  private readonly bucketTypes: DataType[];
  // Fixed per table: computed once, not per routed row.
  private readonly partitionNames: string[];
  private readonly partitionTypes: DataType[];
  private readonly partitionDefaultName: string;
  /** Bucket count per partition written to: its live files' count, or the table's for a new partition. */
  private readonly partitionBuckets = new Map<string, number>();
  private readonly tableBucketCount: boolean;

  constructor(
    private readonly table: Table,
    opts: { tableBucketCount?: boolean },
  ) {
    const s = table.schema;
    const byName = (n: string) => s.fields.find((f) => f.name === n)!;
    this.partitionFields = s.partitionKeys.map(byName);
    this.bucketFields = bucketKeyFields(table);
    this.bucketTypes = this.bucketFields.map((f) => f.type);
    this.partitionNames = this.partitionFields.map((f) => f.name);
    this.partitionTypes = this.partitionFields.map((f) => f.type);
    this.partitionDefaultName = table.options.partitionDefaultName;
    // A bucket-unaware append table (bucket = -1) keeps every row of a partition in bucket 0 (as
    // Paimon does); its files record one bucket, and no hash is computed (no bucket key).
    this.numBuckets = table.options.bucket === -1 ? 1 : table.options.bucket;
    this.tableBucketCount = opts.tableBucketCount === true || table.options.bucket === -1;
  }

  /**
   * Learns the bucket count of each partition not seen yet. `bucket` applies to new partitions;
   * an existing partition keeps the count its files were written for until `rescale` rewrites it
   * (as Paimon records totalBuckets per file), so a partition never holds files of two counts.
   */
  async resolveBuckets(partitions: Iterable<string>): Promise<void> {
    const unknown = new Set<string>();
    for (const p of partitions) if (!this.partitionBuckets.has(p)) unknown.add(p);
    if (unknown.size === 0) return;
    let found = new Map<string, number>();
    if (!this.tableBucketCount) {
      const t = this.table;
      // The newest snapshot this table object committed or read, when known recently enough
      // (ROUTING_VIEW_MS), else the latest: a rescale since then makes the commit fail on its
      // bucket-count check (StaleBucketCountError; Table.write routes again), never mix counts.
      // Looked up through the committer's caching manager: the commit then starts from the same
      // base, read once (no second LATEST, HEADs and GET of it).
      const known = t.commitSnapshots.newestKnown();
      const latest = known && knownRecently(t, known.id) ? known : await t.commitSnapshots.latest();
      // What the snapshot carries per partition answers as its files would, without a manifest read.
      const summary = latest && bucketSummaryOf(latest);
      if (summary) found = summaryTotalBuckets(summary, unknown);
      else if (latest)
        found = await findPartitionTotalBuckets(
          t.store,
          t.path,
          await readDataManifests(t.store, t.path, latest, t.manifestCache),
          unknown,
          undefined,
          t.manifestCache,
        );
    }
    for (const p of unknown) this.partitionBuckets.set(p, found.get(p) ?? this.numBuckets);
  }

  /** The bucket count of `partition` (resolved by resolveBuckets; the table's when it was not). */
  bucketCount(partition: string): number {
    return this.partitionBuckets.get(partition) ?? this.numBuckets;
  }

  /** The partition path of a row whose column values `valueOf` gives. */
  partitionOf(valueOf: (f: DataField) => Value): string {
    return this.partitionFields.length
      ? partitionPath(
          this.partitionNames,
          this.partitionFields.map(valueOf),
          this.partitionTypes,
          this.partitionDefaultName,
        )
      : '';
  }

  /** `partition\0bucket` of a row of `partition` (bucket count resolved) whose column values `valueOf` gives. */
  route(partition: string, valueOf: (f: DataField) => Value): string {
    const bucket = bucketOf(this.bucketTypes, this.bucketFields.map(valueOf), this.partitionBuckets.get(partition)!);
    return `${partition}\u0000${bucket}`;
  }

  /**
   * The bucket of every row of `flat`: a one-column integer bucket key without nulls is hashed
   * straight from its values (the bulk case), any other through a value per row.
   */
  bucketsOfColumns(flat: arrow.Table, vectors: arrow.Vector[], numBuckets: number): Int32Array {
    const n = flat.numRows;
    const buckets = new Int32Array(n);
    const root = this.bucketTypes.length === 1 ? this.bucketTypes[0].root : undefined;
    const data = vectors.length === 1 && vectors[0].data.length === 1 ? vectors[0].data[0] : undefined;
    if (
      data &&
      data.nullCount === 0 &&
      (root === 'BIGINT' || root === 'INT' || root === 'SMALLINT' || root === 'TINYINT')
    ) {
      const chunk = chunkOfData(data, this.bucketFields[0].name);
      if (chunk.kind === 'int64' && root === 'BIGINT') {
        const w = chunk.words!;
        for (let i = 0; i < n; i++) buckets[i] = bucketOfInt64Words(w[2 * i], w[2 * i + 1], numBuckets);
        return buckets;
      }
      if (chunk.kind === 'int' && root !== 'BIGINT') {
        const v = chunk.num!;
        for (let i = 0; i < n; i++) buckets[i] = bucketOfInt32(v[i], numBuckets);
        return buckets;
      }
    }
    const values: Value[] = new Array(vectors.length);
    for (let i = 0; i < n; i++) {
      for (let k = 0; k < vectors.length; k++) values[k] = arrowValue(this.bucketFields[k], vectors[k].get(i));
      buckets[i] = bucketOf(this.bucketTypes, values, numBuckets);
    }
    return buckets;
  }
}

/** The JS value (lib/schema/types.ts) of an Arrow cell of a routing column. */
export function arrowValue(f: DataField, v: unknown): Value {
  if (v === null || v === undefined) return null;
  switch (f.type.root) {
    case 'BIGINT':
    case 'TIMESTAMP':
      return typeof v === 'bigint' ? v : BigInt(v as number);
    case 'DATE':
      // Arrow JS returns DateDay cells as epoch milliseconds.
      return typeof v === 'number' ? Math.round(v / 86_400_000) : (v as Value);
    default:
      return v as Value;
  }
}
