/**
 * The user-facing handle of one table: its schema, options and snapshots, and the entry points
 * for writing (TableWriter), batch reads with time travel, the audit log and system tables.
 */
import type * as arrow from 'apache-arrow';
import { TableOptions } from '../schema/options.js';
import { compareKeyTuples, fromJsonValue } from '../schema/values.js';
import type { DataField, DataType, Row, TableSchema, Value } from '../schema/types.js';
import type { JsonValue } from '../schema/value-codec.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import type { ObjectStore } from '../store/object-store.js';
import { LruManifestCache } from '../manifest/manifest-file.js';
import { SnapshotManager } from '../snapshot/snapshot-manager.js';
import { readTable, type ReadOptions } from './read.js';
import { scanTable, type ScanOptions } from './scan.js';
import { TableWriter, type CommitResult, type WriterOptions } from './writer.js';
import { resolveSnapshot, type SnapshotSpec } from './time-travel.js';
import { NO_COMMIT_HOOKS, type AppendCommitHooks } from './commit-hooks.js';

export class Table {
  readonly options: TableOptions;
  readonly snapshots: SnapshotManager;
  /**
   * The snapshot reader of this table's commits: it keeps the (immutable) snapshots it read, so a
   * writer's next commit does not read the duplicate-check window again.
   */
  readonly commitSnapshots: SnapshotManager;
  /** Manifests read by this table object's commits and compactions (immutable, so cacheable). */
  readonly manifestCache = new LruManifestCache(200_000);
  /** Primary key fields, in key order. */
  readonly keyFields: DataField[];
  readonly keyTypes: DataType[];
  /** Orders the JSON-encoded keys of file metadata exactly like the merge orders rows. */
  readonly compareKeys: (a: JsonValue[], b: JsonValue[]) => number;

  constructor(
    readonly store: ObjectStore,
    /** `database.table`. */
    readonly name: string,
    /** Folder of the table in the warehouse. */
    readonly path: string,
    readonly schema: TableSchema,
    /** Work around APPEND commits (the catalogs pass inline compaction). */
    readonly commitHooks: AppendCommitHooks = NO_COMMIT_HOOKS,
  ) {
    this.options = new TableOptions(schema.options, schema.fields);
    this.snapshots = new SnapshotManager(store, path);
    this.commitSnapshots = new SnapshotManager(store, path, { cacheSnapshots: true });
    this.keyFields = schema.primaryKeys.map((k) => schema.fields.find((f) => f.name === k)!);
    this.keyTypes = this.keyFields.map((f) => f.type);
    const types = this.keyTypes;
    // File metadata keys are compared many times (sorting, interval partitioning, conflict
    // checks): decode each key tuple once, not on every comparison.
    const decoded = new WeakMap<JsonValue[], Value[]>();
    const decode = (k: JsonValue[]): Value[] => {
      let v = decoded.get(k);
      if (!v) decoded.set(k, (v = k.map((x, i) => fromJsonValue(types[i], x))));
      return v;
    };
    this.compareKeys = (a, b) => compareKeyTuples(types, decode(a), decode(b));
  }

  /** A writer that buffers rows per bucket and commits them as one snapshot per `commit()`. */
  newWriter(opts: WriterOptions = {}): TableWriter {
    return new TableWriter(this, opts);
  }

  /** Writes rows (with optional row kinds) and commits them as one snapshot. */
  async write(rows: Row[], opts: WriterOptions & { kinds?: ArrayLike<number>; commitIdentifier?: string } = {}): Promise<CommitResult> {
    const writer = this.newWriter(opts);
    try {
      await writer.write(rows, opts.kinds);
      return await writer.commit(opts.commitIdentifier);
    } finally {
      await writer.close();
    }
  }

  /** Reads the merged state of the table at a snapshot (latest by default) as an Arrow table. */
  async read(opts: ReadOptions = {}): Promise<arrow.Table> {
    return readTable(this, opts);
  }

  /**
   * The same merged state as `read`, streamed: RecordBatches per (partition, bucket) in key order,
   * read row group by row group, so memory does not grow with the table.
   */
  scan(opts: ScanOptions = {}): AsyncGenerator<arrow.RecordBatch> {
    return scanTable(this, opts);
  }

  /** The snapshot a read resolves to (id, timestamp or tag), or undefined for an empty table. */
  async snapshotFor(spec: SnapshotSpec = {}): Promise<Snapshot | undefined> {
    return resolveSnapshot(this, spec);
  }
}
