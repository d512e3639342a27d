/**
 * Bucket rescale (Paimon: ALTER TABLE SET ('bucket' = N), then INSERT OVERWRITE of the partitions):
 * rewrites the rows of whole partitions into a new bucket count and commits one OVERWRITE
 * snapshot that names exactly the files it removes and adds. Every partition records its bucket
 * count in its files' `totalBuckets`; a rescale is the only way an existing partition's count
 * changes. Without a partition spec the table's `bucket` option changes first (so new partitions
 * take the new count), then every partition is rewritten.
 *
 * What is written: a primary-key table's merged state (deletes dropped, absolute sequence numbers
 * kept), each new bucket's rows in key order as one sorted run at the highest level — nothing older
 * can lie below it, and a lookup changelog producer finds no level-0 file to announce again; an
 * append table's rows, each new bucket's in sequence order, at level 0. Rows keep their sequence
 * numbers, so later writes still win and append order is unchanged.
 *
 * Streams skip an OVERWRITE snapshot (an `overwrite-skipped` event). The data is unchanged, but a
 * key moves to another bucket (another reader, another SQS message group): a consumer still
 * reading snapshots before the rescale could deliver a key's later changes before its earlier
 * ones. So a rescale is refused while a consumer has not read up to the latest snapshot, unless
 * forced; a consumer that has skips the OVERWRITE and loses nothing (the rows are the same).
 */
import { InvalidArgumentError } from '../errors.js';
import { concatTables, singleBatch, tableToRows, takeRows } from '../format/columns.js';
import { physicalArrowSchema } from '../format/arrow-schema.js';
import { readChangelogFiles, readDeltaEntries, readLiveFiles } from '../manifest/scan.js';
import type { ManifestEntry } from '../manifest/types.js';
import { storedSequence } from '../mergetree/merge-plan.js';
import { sortByKey } from '../mergetree/key-order.js';
import { bucketOf } from '../schema/bucket.js';
import { parsePartitionPath } from '../schema/partition.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { listConsumers } from '../snapshot/consumer.js';
import { commitRewrite, FileRewrite } from './file-rewrite.js';
import { mergeBuckets, readFailure } from './read.js';
import type { Table } from './table.js';

/** Snapshot property of a rescale's OVERWRITE snapshot: the new bucket count. */
export const RESCALE_PROPERTY = 'varve.rescale';

export interface RescaleOptions {
  /** The new number of buckets (≥ 1). */
  buckets: number;
  /** Only the partitions whose values equal these; the table's `bucket` option is then left as it is. */
  partition?: Record<string, string>;
  /** Rescale even though streaming consumers exist (they skip the OVERWRITE snapshot). */
  force?: boolean;
  commitUser?: string;
}

export interface RescaleResult {
  /** The OVERWRITE snapshot, when anything was rewritten. */
  snapshot?: Snapshot;
  /** Partitions rewritten, and those already at the requested count (left alone). */
  partitions: string[];
  unchanged: string[];
  filesRemoved: number;
  filesAdded: number;
  rows: number;
  /** True when the table's `bucket` option was changed (a rescale of the whole table). */
  optionChanged: boolean;
}

/** Rewrites the table (or some partitions) into `opts.buckets` buckets as one OVERWRITE snapshot. */
export async function rescaleTable(table: Table, opts: RescaleOptions): Promise<RescaleResult> {
  const n = opts.buckets;
  if (!Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError(`--buckets must be an integer ≥ 1, got ${n}`);
  let t = await table.latest();
  if (t.options.bucket === -1) {
    throw new InvalidArgumentError(
      `${t.name} is bucket-unaware (bucket = -1, an append table without bucket-key): it has no buckets to rescale; its partitions already hold any number of files`,
    );
  }
  const spec = opts.partition && Object.keys(opts.partition).length > 0 ? opts.partition : undefined;
  if (spec) {
    for (const k of Object.keys(spec)) {
      if (!t.schema.partitionKeys.includes(k)) {
        throw new InvalidArgumentError(
          `"${k}" is not a partition key of ${t.name}; ${t.schema.partitionKeys.length ? `its partition keys are ${t.schema.partitionKeys.join(', ')}` : 'the table is not partitioned: rescale it whole'}`,
        );
      }
    }
  }
  if (!opts.force) {
    // A consumer whose next snapshot exists has changes before the rescale still to deliver
    // (planned splits in flight, on AWS): those are the ones the bucket change could reorder.
    const latestId = (await t.snapshots.latestId()) ?? 0;
    const behind = await consumersWithChangesToDeliver(t, latestId, spec && partitionMatcher(spec));
    if (behind.length > 0) {
      throw new InvalidArgumentError(
        `${t.name} has streaming consumers that have not read up to snapshot ${latestId} (${behind.map((c) => `${c.id} at snapshot ${c.nextSnapshot}`).join(', ')}): ` +
          "a rescale is an OVERWRITE, which streams skip, and it moves keys to other buckets (other readers), so a consumer still behind it could deliver a key's changes out of order; " +
          'let the consumers catch up (or expire), or pass --force',
      );
    }
  }
  let optionChanged = false;
  if (!spec && t.options.bucket !== n) {
    // New partitions take the new count from here on; existing ones are rewritten below.
    t = (await t.alter([{ kind: 'set-option', key: 'bucket', value: String(n) }])).table;
    optionChanged = true;
  }
  // A `rewrite` action of the commit loop: a concurrent write or compaction of the same
  // partitions makes it plan again on the latest snapshot, under the loop's one retry budget.
  const empty = { partitions: [] as string[], unchanged: [] as string[], filesRemoved: 0, filesAdded: 0, rows: 0 };
  let out = empty;
  const done = await commitRewrite(
    t,
    { commitUser: opts.commitUser ?? 'rescale', properties: { [RESCALE_PROPERTY]: String(n) } },
    async (base) => {
      const planned = await planRescale(await t.latest(), base, n, spec);
      out = planned.out;
      return planned.rewrite;
    },
  );
  if (done.rewrite === undefined) return { ...out, optionChanged };
  return {
    ...out,
    snapshot: done.snapshot,
    filesRemoved: done.rewrite.counts.removed,
    filesAdded: done.rewrite.counts.added,
    optionChanged,
  };
}

/**
 * The consumers that still have row changes to deliver before the rescale: those whose next
 * snapshot is at most `latestId` and for which a snapshot from there on carries rows (a write,
 * an overwrite, or a compaction with changelog) of a rescaled partition (`matches`; all when
 * undefined). A consumer behind only by schema changes, compactions without changelog and changes
 * of other partitions has no key change left that the new buckets could reorder (the README
 * tour's `tail --consumer-id me`, followed by an alter, writes and a rollback of another day, and a
 * full compaction). A snapshot already expired counts as carrying rows: that consumer fails on it,
 * or skips it, either way not here.
 */
async function consumersWithChangesToDeliver(
  t: Table,
  latestId: number,
  matches: ((partition: string) => boolean) | undefined,
): Promise<Array<{ id: string; nextSnapshot: number }>> {
  const consumers = (await listConsumers(t.store, t.path)).filter((c) => c.nextSnapshot <= latestId);
  if (consumers.length === 0) return [];
  const from = Math.min(...consumers.map((c) => c.nextSnapshot));
  // The newest snapshot with such rows: a consumer is behind when its next snapshot is at most that one.
  for (let id = latestId; id >= from; id--) {
    const s = await t.snapshots.tryRead(id);
    if (s === undefined || (carriesRowChanges(s) && (await changesPartitions(t, s, matches))))
      return consumers.filter((c) => c.nextSnapshot <= id);
  }
  return [];
}

/** The predicate of a partition spec over partition paths. */
function partitionMatcher(spec: Record<string, string>): (partition: string) => boolean {
  return (p) => Object.entries(spec).every(([k, v]) => parsePartitionPath(p)[k] === v);
}

/** True when snapshot `s` changed files (data or changelog) of a partition `matches` takes (any, when undefined). */
async function changesPartitions(
  t: Table,
  s: Snapshot,
  matches: ((partition: string) => boolean) | undefined,
): Promise<boolean> {
  if (matches === undefined) return true;
  const filter = { partition: matches };
  if ((await readDeltaEntries(t.store, t.path, s, filter, t.manifestCache)).length > 0) return true;
  return (await readChangelogFiles(t.store, t.path, s, filter, t.manifestCache)).length > 0;
}

/** True when a stream reading `s` may deliver row changes (anything but a schema change or a compaction without changelog). */
function carriesRowChanges(s: Snapshot): boolean {
  if ((s.changelogRecordCount ?? 0) > 0) return true;
  if (s.commitKind === 'COMPACT') return false;
  return s.commitKind === 'OVERWRITE' || s.deltaRecordCount !== 0;
}

/** The rescale of `spec`'s partitions (or all) on `latest`: the rewrite (undefined: nothing to rewrite) and what it covers. */
async function planRescale(
  t: Table,
  latest: Snapshot | undefined,
  n: number,
  spec: Record<string, string> | undefined,
): Promise<{ rewrite?: FileRewrite; out: Omit<RescaleResult, 'optionChanged' | 'snapshot'> }> {
  const out = { partitions: [] as string[], unchanged: [] as string[], filesRemoved: 0, filesAdded: 0, rows: 0 };
  if (!latest) return { out };
  const matches = spec ? partitionMatcher(spec) : undefined;
  const live = await readLiveFiles(t.store, t.path, latest, { partition: matches }, t.manifestCache);
  if (spec && live.length === 0) {
    throw new InvalidArgumentError(
      `${t.name} has no partition ${Object.entries(spec)
        .map(([k, v]) => `${k}=${v}`)
        .join(',')}; list partitions with \`varve sys ${t.name} partitions\``,
    );
  }
  const byPartition = new Map<string, ManifestEntry[]>();
  for (const e of live) byPartition.set(e.partition, [...(byPartition.get(e.partition) ?? []), e]);
  const rewrite = new FileRewrite(t);
  try {
    for (const [partition, entries] of [...byPartition].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (entries.every((e) => e.totalBuckets === n)) {
        out.unchanged.push(partition);
        continue;
      }
      out.partitions.push(partition);
      out.rows += await rewritePartition(t, latest, partition, entries, n, rewrite);
    }
  } catch (e) {
    // Nothing references what this plan wrote yet.
    await rewrite.abandon();
    throw e;
  }
  return { rewrite: out.partitions.length === 0 ? undefined : rewrite, out };
}

/**
 * Reads one partition's rows (a keyed table's merged state, an append table's rows), routes them
 * into `n` buckets and adds them to the rewrite; returns the number of rows.
 */
async function rewritePartition(
  t: Table,
  snapshot: Snapshot,
  partition: string,
  entries: ManifestEntry[],
  n: number,
  rewrite: FileRewrite,
): Promise<number> {
  for (const e of entries) rewrite.remove(e);
  let parts;
  try {
    parts = await mergeBuckets(t, entries, { dropDeletes: true });
  } catch (e) {
    throw await readFailure(t, snapshot.id, e);
  }
  const schema = physicalArrowSchema(t.schema);
  const rows = singleBatch(concatTables(parts, schema));
  if (rows.numRows === 0) return 0;
  const appendOnly = t.schema.primaryKeys.length === 0;
  const s = t.schema;
  const keyNames = t.options.bucketKey.length
    ? t.options.bucketKey
    : s.primaryKeys.filter((k) => !s.partitionKeys.includes(k));
  const bucketFields = (keyNames.length ? keyNames : s.primaryKeys).map((k) => s.fields.find((f) => f.name === k)!);
  const types = bucketFields.map((f) => f.type);
  const bucketRows: number[][] = Array.from({ length: n }, () => []);
  tableToRows(rows.select(bucketFields.map((f) => f.name)), bucketFields).forEach((r, i) => {
    bucketRows[
      bucketOf(
        types,
        bucketFields.map((f) => r[f.name]),
        n,
      )
    ].push(i);
  });
  const bytesPerRow =
    entries.reduce((a, e) => a + e.file.fileSize, 0) /
    Math.max(
      1,
      entries.reduce((a, e) => a + e.file.rowCount, 0),
    );
  const level = appendOnly ? 0 : t.options.numLevels - 1;
  for (let b = 0; b < n; b++) {
    if (bucketRows[b].length === 0) continue;
    const part = takeRows(rows, Uint32Array.from(bucketRows[b]));
    // A sorted run: key order for a keyed table (rows from several old buckets interleave), sequence order for an append table.
    const order = appendOnly ? bySequence(part) : sortByKey(part, s.primaryKeys).order;
    await rewrite.add({ partition, bucket: b, totalBuckets: n, level }, takeRows(part, order), bytesPerRow);
  }
  return rows.numRows;
}

function bySequence(t: ReturnType<typeof takeRows>): Uint32Array {
  const seq = storedSequence(t);
  return Uint32Array.from(seq.keys()).sort((a, b) => seq[a] - seq[b] || a - b);
}
