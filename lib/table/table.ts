/**
 * The user-facing handle of one table: its schema, options and snapshots, and the entry points
 * for writing (TableWriter), batch reads with time travel, the audit log and system tables.
 */
import type * as arrow from 'apache-arrow';
import { TableOptions } from '../schema/options.js';
import { compareKeyTuples, fromJsonValue } from '../schema/values.js';
import { RowKind, type DataField, type DataType, type Row, type TableSchema, type Value } from '../schema/types.js';
import type { JsonValue } from '../schema/value-codec.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import type { ObjectStore } from '../store/object-store.js';
import { LruManifestCache } from '../manifest/manifest-file.js';
import { SnapshotManager } from '../snapshot/snapshot-manager.js';
import { readTable, type ReadOptions } from './read.js';
import { scanTable, type ScanOptions } from './scan.js';
import { TableWriter, type CommitResult, type OverwriteMode, type WriterOptions } from './writer.js';
import { readLiveFiles } from '../manifest/scan.js';
import { parsePartitionPath } from '../schema/partition.js';
import { tableToRows } from '../format/columns.js';
import type { Predicate } from './predicate.js';
import { resolveSnapshot, type SnapshotSpec } from './time-travel.js';
import { NO_COMMIT_HOOKS, type CommitHooks } from './commit-hooks.js';
import { latestSchema, readSchema } from '../schema/schema-manager.js';
import {
  CorruptMetadataError,
  InvalidArgumentError,
  ObjectNotFoundError,
  StaleBucketCountError,
  TableNotFoundError,
} from '../errors.js';
import type { SchemaChange } from '../schema/schema-evolution.js';
import { alterTable, type AlterResult } from './alter.js';
import { deleteWhereAppend } from './append-delete.js';
import { rescaleTable, type RescaleOptions, type RescaleResult } from './rescale.js';
import { followSchemaChanges } from '../retry-budget.js';

/**
 * What a table object keeps of its immutable metadata (snapshots read or committed, manifests):
 * every view of the table shares it (withSchema), and a process that opens the table again
 * (a function's warm container, lib/aws/tables.ts) passes it on, so nothing is read twice.
 */
export interface TableCaches {
  commitSnapshots: SnapshotManager;
  manifestCache: LruManifestCache;
}

export class Table {
  readonly options: TableOptions;
  readonly snapshots: SnapshotManager;
  /**
   * The snapshot reader of this table's commits: it keeps the (immutable) snapshots it read, so a
   * writer's next commit does not read the duplicate-check window again.
   */
  readonly commitSnapshots: SnapshotManager;
  /** Manifests read by this table object's commits and compactions (immutable, so cacheable). */
  readonly manifestCache: LruManifestCache;
  /** Primary key fields, in key order. */
  readonly keyFields: DataField[];
  readonly keyTypes: DataType[];
  /** Orders the JSON-encoded keys of file metadata exactly like the merge orders rows. */
  readonly compareKeys: (a: JsonValue[], b: JsonValue[]) => number;
  /** Schema versions read so far (schema files are never rewritten), shared by every view of the table. */
  private schemaVersions = new Map<number, Promise<TableSchema>>();

  constructor(
    readonly store: ObjectStore,
    /** `database.table`. */
    readonly name: string,
    /** Folder of the table in the warehouse. */
    readonly path: string,
    readonly schema: TableSchema,
    /** Work around every commit (the catalogs pass inline compaction and the Iceberg export). */
    readonly commitHooks: CommitHooks = NO_COMMIT_HOOKS,
    /** The caches of another object of this table (same store and path) to share; new ones by default. */
    caches?: TableCaches,
  ) {
    if (caches && (caches.commitSnapshots.store !== store || caches.commitSnapshots.tablePath !== path))
      throw new InvalidArgumentError(
        `the caches passed to table ${name} are another table's (${caches.commitSnapshots.tablePath}); share caches only between objects of one table on one store`,
      );
    this.options = new TableOptions(schema.options, schema.fields);
    this.snapshots = new SnapshotManager(store, path);
    this.commitSnapshots = caches?.commitSnapshots ?? new SnapshotManager(store, path, { cacheSnapshots: true });
    this.manifestCache = caches?.manifestCache ?? new LruManifestCache(200_000);
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
    this.schemaVersions.set(schema.id, Promise.resolve(schema));
  }

  /**
   * Schema version `id` of this table (cached: schema files are never rewritten). A version that
   * a snapshot or file names and whose file is gone is damage: CorruptMetadataError naming it.
   */
  schemaById(id: number): Promise<TableSchema> {
    let s = this.schemaVersions.get(id);
    if (!s) {
      s = readSchema(this.store, this.path, id).catch((e: unknown) => {
        if (!(e instanceof ObjectNotFoundError)) throw e;
        throw new CorruptMetadataError(
          `schema ${id} of table ${this.name} is missing (${this.path}/schema/schema-${id}), yet a snapshot or data file was written under it; restore the schema file from a copy (\`varve verify\` names everything written under it)`,
          { cause: e },
        );
      });
      s.catch(() => this.schemaVersions.delete(id));
      this.schemaVersions.set(id, s);
    }
    return s;
  }

  /** The caches of this table object, to share with another object of the same table. */
  caches(): TableCaches {
    return { commitSnapshots: this.commitSnapshots, manifestCache: this.manifestCache };
  }

  /** This table seen through another of its schema versions (time travel, or after an alter). */
  withSchema(schema: TableSchema): Table {
    if (schema.id === this.schema.id) return this;
    const view = new Table(this.store, this.name, this.path, schema, this.commitHooks, this.caches());
    view.schemaVersions = this.schemaVersions;
    this.schemaVersions.set(schema.id, Promise.resolve(schema));
    return view;
  }

  /** This table at its newest schema (itself when no alter happened since it was opened). */
  async latest(): Promise<Table> {
    const schema = await latestSchema(this.store, this.path);
    if (!schema) throw new TableNotFoundError(this.name);
    return schema.id > this.schema.id ? this.withSchema(schema) : this;
  }

  /** A writer that buffers rows per bucket and commits them as one snapshot per `commit()`. */
  newWriter(opts: WriterOptions = {}): TableWriter {
    return new TableWriter(this, opts);
  }

  /** Writes rows (with optional row kinds) and commits them as one snapshot. */
  async write(
    rows: Row[],
    opts: WriterOptions & { kinds?: ArrayLike<number>; commitIdentifier?: string } = {},
  ): Promise<CommitResult> {
    return this.writeCommit(rows, opts);
  }

  /**
   * INSERT OVERWRITE: writes rows and commits them as one OVERWRITE snapshot replacing the
   * partitions they go to (`dynamic-partition-overwrite`, true by default as in Paimon) or, with
   * it false or on an unpartitioned table, the whole table.
   */
  async overwrite(
    rows: Row[],
    opts: WriterOptions & {
      kinds?: ArrayLike<number>;
      commitIdentifier?: string;
      dynamicPartitionOverwrite?: boolean;
    } = {},
  ): Promise<CommitResult> {
    const dynamic =
      (opts.dynamicPartitionOverwrite ?? (this.options.get('dynamic-partition-overwrite') as boolean)) &&
      this.schema.partitionKeys.length > 0;
    return this.writeCommit(rows, opts, dynamic ? 'dynamic' : 'all');
  }

  /** Removes every row (an OVERWRITE snapshot with no files; time travel still sees the old ones). */
  async truncate(opts: { commitIdentifier?: string } = {}): Promise<CommitResult> {
    return this.writeCommit([], opts, 'all');
  }

  /**
   * Removes the partitions whose values equal `spec` (a partial spec matches every partition
   * below it), as one OVERWRITE snapshot. InvalidArgumentError when no live partition matches.
   */
  async dropPartition(spec: Record<string, string>, opts: { commitIdentifier?: string } = {}): Promise<CommitResult> {
    const keys = this.schema.partitionKeys;
    if (keys.length === 0)
      throw new InvalidArgumentError(`${this.name} is not partitioned; use truncate to remove every row`);
    for (const k of Object.keys(spec)) {
      if (!keys.includes(k))
        throw new InvalidArgumentError(
          `"${k}" is not a partition key of ${this.name}; its partition keys are ${keys.join(', ')}`,
        );
    }
    if (Object.keys(spec).length === 0)
      throw new InvalidArgumentError('name the partition to drop, e.g. dt=2024-05-01');
    const latest = await this.snapshots.latest();
    const matches = (p: string) => Object.entries(spec).every(([k, v]) => parsePartitionPath(p)[k] === v);
    const live = latest ? await readLiveFiles(this.store, this.path, latest, { partition: matches }) : [];
    if (live.length === 0) {
      throw new InvalidArgumentError(
        `${this.name} has no partition ${Object.entries(spec)
          .map(([k, v]) => `${k}=${v}`)
          .join(',')}; list partitions with \`varve sys ${this.name} partitions\``,
      );
    }
    return this.writeCommit([], opts, { match: spec });
  }

  /**
   * DELETE FROM … WHERE: writes a -D record for the key of every row matching `where` at the
   * latest snapshot (one APPEND commit; streams see the deletes). Needs a merge engine for which
   * -D removes the row. On an append table (no primary key) the files holding matching rows are
   * rewritten without them, as one OVERWRITE snapshot (streams skip it); `rows` is the number removed.
   */
  async deleteWhere(
    where: string | Predicate,
    opts: WriterOptions & { commitIdentifier?: string } = {},
  ): Promise<CommitResult> {
    // An append table has no key to write a -D for: its files are rewritten without the rows.
    if (this.schema.primaryKeys.length === 0) return deleteWhereAppend(this, where, opts);
    const engine = this.options.mergeEngine;
    const removes =
      engine === 'deduplicate' ||
      (engine === 'partial-update' && this.options.get('partial-update.remove-record-on-delete') === true) ||
      (engine === 'aggregation' && this.options.get('aggregation.remove-record-on-delete') === true);
    if (!removes) {
      throw new InvalidArgumentError(
        `delete --where needs a merge engine where a -D record removes the row: ${this.name} has merge-engine=${engine}` +
          (engine === 'first-row'
            ? ', which keeps the first version forever'
            : `; set ${engine}.remove-record-on-delete=true (varve alter --set)`),
      );
    }
    const latest = await this.latest();
    const matching = await latest.read({ where, columns: latest.schema.primaryKeys });
    const rows = tableToRows(matching, latest.keyFields);
    if (rows.length === 0) return { alreadyCommitted: false, files: 0, rows: 0 };
    return latest.writeCommit(rows, { ...opts, kinds: new Uint8Array(rows.length).fill(RowKind.DELETE) });
  }

  private async writeCommit(
    rows: Row[],
    opts: WriterOptions & { kinds?: ArrayLike<number>; commitIdentifier?: string },
    overwrite?: OverwriteMode,
  ): Promise<CommitResult> {
    // A concurrent alter makes the commit fail with SchemaChangedError: the rows are then written
    // again under the new schema (mapped by field id), as if they had come just after the alter.
    return followSchemaChanges(
      `writing to ${this.name}`,
      { table: this as Table, rows },
      async ({ table, rows }) => {
        for (let rerouted = 0; ; rerouted++) {
          // An overwrite replaces whole partitions: they take the table's bucket count (Paimon's way to rescale).
          const writer = table.newWriter(overwrite === undefined ? opts : { ...opts, tableBucketCount: true });
          try {
            await writer.write(rows, opts.kinds);
            return await writer.commit(opts.commitIdentifier, overwrite === undefined ? {} : { overwrite });
          } catch (e) {
            // Routed by a snapshot older than another writer's rescale, rollback or truncate: the
            // commit deleted the files and read the snapshot that has the partition's count, so a
            // new writer routes the rows by it. Bounded: a count that keeps changing stays loud.
            if (!(e instanceof StaleBucketCountError) || rerouted === STALE_ROUTING_RETRIES) throw e;
            await knowSnapshot(table, e.details.snapshotId);
          } finally {
            await writer.close();
          }
        }
      },
      async ({ table, rows }) => {
        const next = await table.latest();
        return { table: next, rows: rowsThroughSchema(rows, table.schema, next.schema) };
      },
    );
  }

  /**
   * Rewrites the table (or the partitions matching `opts.partition`) into `opts.buckets` buckets as
   * one OVERWRITE snapshot; without a partition the `bucket` option changes too, so new partitions
   * take the new count. Refused while a streaming consumer is behind, unless `force`.
   */
  async rescale(opts: RescaleOptions): Promise<RescaleResult> {
    return rescaleTable(this, opts);
  }

  /** Changes the schema (add, rename, drop, widen columns; options; comment); returns the table at the new schema. */
  async alter(changes: readonly SchemaChange[]): Promise<AlterResult> {
    return alterTable(this, changes);
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

  /**
   * The number of merged rows at a snapshot (latest by default), optionally only those matching
   * `where`; counted over the streamed scan, so memory does not grow with the table.
   */
  async count(opts: Omit<ReadOptions, 'columns' | 'keepDeletes'> = {}): Promise<number> {
    let rows = 0;
    // Only counted: the scan may reuse its decode buffers.
    for await (const batch of scanTable(this, { ...opts, reuseBuffers: true })) rows += batch.numRows;
    return rows;
  }

  /** The snapshot a read resolves to (id, timestamp or tag), or undefined for an empty table. */
  async snapshotFor(spec: SnapshotSpec = {}): Promise<Snapshot | undefined> {
    return resolveSnapshot(this, spec);
  }
}

/** Times Table.write routes its rows again after a commit refused them for a stale bucket count. */
const STALE_ROUTING_RETRIES = 3;

/**
 * Makes `table`'s committer know snapshot `id` (or a newer one), which the next writer's routing
 * starts from (write-routing.ts resolveBuckets); the commit that named it has read it already.
 */
async function knowSnapshot(table: Table, id: number | undefined): Promise<void> {
  const known = table.commitSnapshots.newestKnown();
  if (known === undefined || id === undefined || known.id < id) await table.commitSnapshots.latest();
}

/** Rows of schema `from` as rows of the later schema `to`: values follow their field id (renamed, dropped, added columns). */
function rowsThroughSchema(rows: Row[], from: TableSchema, to: TableSchema): Row[] {
  const oldName = new Map(from.fields.map((f) => [f.id, f.name]));
  const same =
    to.fields.length === from.fields.length &&
    to.fields.every((f, i) => from.fields[i].id === f.id && from.fields[i].name === f.name);
  if (same) return rows;
  return rows.map((r) => {
    const out: Row = {};
    for (const f of to.fields) {
      const name = oldName.get(f.id);
      out[f.name] = name === undefined ? null : (r[name] ?? null);
    }
    return out;
  });
}
