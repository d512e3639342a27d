/**
 * System tables: metadata of a table as records (Paimon's `$snapshots`, `$files`, `$manifests`,
 * long-lived `changelogs`,
 * `$schemas`, `$options`, `$tags`, `$buckets`, `$consumers`), with Paimon's column names, and
 * `statistics`: per column, what the files' statistics say at a snapshot (Paimon's `$statistics`
 * shows what ANALYZE collected; varve's files carry it already).
 */
import { dvFileIdentity, readDeletionIndex } from '../manifest/deletion-index.js';
import { tableKey } from '../manifest/table-paths.js';
import { InvalidArgumentError } from '../errors.js';
import { runLimited } from '../concurrency.js';
import { readLiveFiles, readSnapshotLists } from '../manifest/scan.js';
import type { ManifestFileMeta } from '../manifest/types.js';
import { readManifestList } from '../manifest/manifest-list.js';
import type { Snapshot } from '../snapshot/snapshot.js';
import { Levels } from '../mergetree/levels.js';
import { formatType } from '../schema/parse.js';
import { listSchemaIds, readSchema } from '../schema/schema-manager.js';
import { listTags } from '../snapshot/tags.js';
import { listChangelogIds, tryReadChangelog, type LongLivedChangelog } from '../snapshot/changelog.js';
import { describeGap, listConsumers, listTombstones } from '../snapshot/consumer.js';
import { columnBounds } from '../format/value-stats.js';
import { compareValues } from '../schema/compare.js';
import type { DataField, Value } from '../schema/types.js';
import { fromJsonValue, toDisplayValue } from '../schema/value-codec.js';
import { dataFileKey } from './paths.js';
import { SYSTEM_TABLES, type SystemTableName } from './system-table-names.js';
import type { Table } from './table.js';
import { resolveSnapshot, type SnapshotSpec } from './time-travel.js';

/** A cell of a system table record. */
export type DisplayValue = string | number | boolean | null;

export { SYSTEM_TABLES, type SystemTableName };

export interface SystemTableResult {
  columns: string[];
  records: Array<Record<string, DisplayValue>>;
}

const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

/** Reads one system table of `table` (at a snapshot where that matters: files, manifests, buckets). */
export async function readSystemTable(table: Table, name: string, spec: SnapshotSpec = {}): Promise<SystemTableResult> {
  switch (name as SystemTableName) {
    case 'snapshots':
      return snapshotsTable(table);
    case 'changelogs':
      return changelogsTable(table);
    case 'files':
      return filesTable(table, await resolveSnapshot(table, spec));
    case 'manifests':
      return manifestsTable(table, await resolveSnapshot(table, spec));
    case 'schemas':
      return schemasTable(table);
    case 'options':
      return {
        columns: ['key', 'value'],
        records: Object.entries(table.schema.options)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([key, value]) => ({ key, value })),
      };
    case 'tags':
      return tagsTable(table);
    case 'buckets':
      return bucketsTable(table, await resolveSnapshot(table, spec));
    case 'partitions':
      return partitionsTable(table, await resolveSnapshot(table, spec));
    case 'statistics':
      return statisticsTable(table, await resolveSnapshot(table, spec));
    case 'consumers':
      return consumersTable(table);
    default:
      throw new InvalidArgumentError(`unknown system table "${name}"; choose one of ${SYSTEM_TABLES.join(', ')}`);
  }
}

async function allSnapshots(table: Table): Promise<Snapshot[]> {
  const ids = await table.snapshots.listIds();
  const snaps = await runLimited(
    ids.map((id) => () => table.snapshots.tryRead(id)),
    16,
  );
  return snaps.filter((s): s is Snapshot => s !== undefined);
}

async function snapshotsTable(table: Table): Promise<SystemTableResult> {
  const columns = [
    'snapshot_id',
    'schema_id',
    'commit_user',
    'commit_identifier',
    'commit_kind',
    'commit_time',
    'total_record_count',
    'delta_record_count',
    'changelog_record_count',
  ];
  const records = (await allSnapshots(table)).map((s) => ({
    snapshot_id: s.id,
    schema_id: s.schemaId,
    commit_user: s.commitUser,
    commit_identifier: s.commitIdentifier,
    commit_kind: s.commitKind,
    commit_time: iso(s.timeMillis),
    total_record_count: s.totalRecordCount,
    delta_record_count: s.deltaRecordCount,
    changelog_record_count: s.changelogRecordCount ?? 0,
  }));
  return { columns, records };
}

/** Long-lived changelogs: snapshots that expired while `changelog.*` retention keeps their changes readable by streams. */
async function changelogsTable(table: Table): Promise<SystemTableResult> {
  const columns = [
    'snapshot_id',
    'schema_id',
    'commit_kind',
    'commit_time',
    'delta_record_count',
    'changelog_record_count',
    'retained_files',
    'retained_manifests',
  ];
  const ids = await listChangelogIds(table.store, table.path);
  const found = await runLimited(
    ids.map((id) => () => tryReadChangelog(table.store, table.path, id)),
    16,
  );
  const records = found
    .filter((c): c is LongLivedChangelog => c !== undefined)
    .map((c) => ({
      snapshot_id: c.id,
      schema_id: c.schemaId,
      commit_kind: c.commitKind,
      commit_time: iso(c.timeMillis),
      delta_record_count: c.deltaRecordCount,
      changelog_record_count: c.changelogRecordCount ?? 0,
      retained_files: c.retained.files.length,
      retained_manifests: c.retained.manifests.length + c.retained.manifestLists.length,
    }));
  return { columns, records };
}

async function filesTable(table: Table, snapshot: Snapshot | undefined): Promise<SystemTableResult> {
  const columns = [
    'partition',
    'bucket',
    'file_path',
    'level',
    'record_count',
    'file_size_in_bytes',
    'min_key',
    'max_key',
    'min_sequence_number',
    'max_sequence_number',
    'creation_time',
  ];
  if (!snapshot) return { columns, records: [] };
  const entries = await readLiveFiles(table.store, table.path, snapshot);
  entries.sort(
    (a, b) =>
      a.partition.localeCompare(b.partition) ||
      a.bucket - b.bucket ||
      a.file.level - b.file.level ||
      a.file.minSequenceNumber - b.file.minSequenceNumber,
  );
  const records: Array<Record<string, DisplayValue>> = entries.map((e) => ({
    partition: e.partition,
    bucket: e.bucket,
    file_path: dataFileKey(table.path, e.partition, e.bucket, e.file.fileName),
    level: e.file.level,
    record_count: e.file.rowCount,
    file_size_in_bytes: e.file.fileSize,
    min_key: JSON.stringify(e.file.minKey),
    max_key: JSON.stringify(e.file.maxKey),
    min_sequence_number: e.file.minSequenceNumber,
    max_sequence_number: e.file.maxSequenceNumber,
    creation_time: iso(e.file.creationTime),
  }));
  if (snapshot.deletionVectors === undefined) return { columns, records };
  // A deletion-vector table: each file's vector (the Puffin file holding it) and how many of its rows it deletes.
  const vectors = new Map(
    (await readDeletionIndex(table.store, table.path, snapshot)).map((r) => [
      dvFileIdentity(r.partition, r.bucket, r.fileName),
      r,
    ]),
  );
  entries.forEach((e, i) => {
    const ref = vectors.get(dvFileIdentity(e.partition, e.bucket, e.file.fileName));
    records[i] = {
      ...records[i],
      deleted_record_count: ref?.cardinality ?? 0,
      deletion_vector_file: ref === undefined ? null : tableKey(table.path, ref.dvFile),
    };
  });
  return { columns: [...columns, 'deleted_record_count', 'deletion_vector_file'], records };
}

async function manifestsTable(table: Table, snapshot: Snapshot | undefined): Promise<SystemTableResult> {
  const columns = ['file_name', 'file_size', 'num_added_files', 'num_deleted_files', 'schema_id', 'list'];
  if (!snapshot) return { columns, records: [] };
  const records: Array<Record<string, DisplayValue>> = [];
  const { base, delta } = await readSnapshotLists(table.store, table.path, snapshot);
  const changelog = snapshot.changelogManifestList
    ? await readManifestList(table.store, table.path, snapshot.changelogManifestList)
    : [];
  const lists: Array<[string, ManifestFileMeta[]]> = [
    ['base', base],
    ['delta', delta],
    ['changelog', changelog],
  ];
  for (const [list, manifests] of lists) {
    for (const m of manifests) {
      records.push({
        file_name: m.fileName,
        file_size: m.fileSize,
        num_added_files: m.numAddedFiles,
        num_deleted_files: m.numDeletedFiles,
        schema_id: m.schemaId,
        list,
      });
    }
  }
  return { columns, records };
}

async function schemasTable(table: Table): Promise<SystemTableResult> {
  const columns = ['schema_id', 'fields', 'partition_keys', 'primary_keys', 'options', 'comment', 'update_time'];
  const ids = await listSchemaIds(table.store, table.path);
  const records = [];
  for (const id of ids) {
    const s = await readSchema(table.store, table.path, id);
    records.push({
      schema_id: s.id,
      fields: s.fields.map((f) => `${f.name} ${formatType(f.type)}`).join(', '),
      partition_keys: s.partitionKeys.join(','),
      primary_keys: s.primaryKeys.join(','),
      options: JSON.stringify(s.options),
      comment: s.comment ?? null,
      update_time: iso(s.timeMillis),
    });
  }
  return { columns, records };
}

async function tagsTable(table: Table): Promise<SystemTableResult> {
  const columns = ['tag_name', 'snapshot_id', 'schema_id', 'commit_time', 'record_count', 'create_time'];
  const tags = await listTags(table.store, table.path);
  const records = tags.map((t) => ({
    tag_name: t.name,
    snapshot_id: t.tag.id,
    schema_id: t.tag.schemaId,
    commit_time: iso(t.tag.timeMillis),
    record_count: t.tag.totalRecordCount,
    create_time: iso(t.tag.tagCreateTime),
  }));
  return { columns, records };
}

async function bucketsTable(table: Table, snapshot: Snapshot | undefined): Promise<SystemTableResult> {
  const columns = [
    'partition',
    'bucket',
    'file_count',
    'sorted_runs',
    'record_count',
    'file_size_in_bytes',
    'max_level',
  ];
  if (!snapshot) return { columns, records: [] };
  const entries = await readLiveFiles(table.store, table.path, snapshot);
  const groups = new Map<string, typeof entries>();
  for (const e of entries) {
    const id = `${e.partition}\u0000${String(e.bucket).padStart(6, '0')}`;
    const g = groups.get(id);
    if (g) g.push(e);
    else groups.set(id, [e]);
  }
  const records = [...groups.keys()].sort().map((id) => {
    const g = groups.get(id)!;
    const levels = new Levels(
      g.map((e) => e.file),
      table.options.numLevels,
    );
    return {
      partition: g[0].partition,
      bucket: g[0].bucket,
      file_count: g.length,
      sorted_runs: levels.numberOfSortedRuns(),
      record_count: g.reduce((n, e) => n + e.file.rowCount, 0),
      file_size_in_bytes: g.reduce((n, e) => n + e.file.fileSize, 0),
      max_level: Math.max(...g.map((e) => e.file.level)),
    };
  });
  return { columns, records };
}

/** Paimon's $partitions: per partition, rows of its live files (unmerged), files, bytes and the newest file's time. */
async function partitionsTable(table: Table, snapshot: Snapshot | undefined): Promise<SystemTableResult> {
  const columns = ['partition', 'record_count', 'file_size_in_bytes', 'file_count', 'last_update_time'];
  if (!snapshot) return { columns, records: [] };
  const groups = new Map<
    string,
    { record_count: number; file_size_in_bytes: number; file_count: number; last: number }
  >();
  for (const e of await readLiveFiles(table.store, table.path, snapshot)) {
    let g = groups.get(e.partition);
    if (!g) groups.set(e.partition, (g = { record_count: 0, file_size_in_bytes: 0, file_count: 0, last: 0 }));
    g.record_count += e.file.rowCount;
    g.file_size_in_bytes += e.file.fileSize;
    g.file_count++;
    g.last = Math.max(g.last, e.file.creationTime);
  }
  const records = [...groups.keys()].sort().map((partition) => {
    const g = groups.get(partition)!;
    return {
      partition,
      record_count: g.record_count,
      file_size_in_bytes: g.file_size_in_bytes,
      file_count: g.file_count,
      last_update_time: iso(g.last),
    };
  });
  return { columns, records };
}

/**
 * Per column of the table's schema, over the live files of a snapshot: the rows of those files
 * (before merging: on a primary-key table an updated or deleted key's older versions still count),
 * how many files have statistics for the column, and from them the null count, min and max — given
 * only when every file has them, so a bound is never a guess. Value columns have statistics in
 * append tables (every file written since value statistics exist); on a primary-key table the
 * first key column's bounds come from the files' key ranges, other columns have none.
 */
async function statisticsTable(table: Table, snapshot: Snapshot | undefined): Promise<SystemTableResult> {
  const columns = [
    'snapshot_id',
    'column',
    'type',
    'record_count',
    'file_count',
    'files_with_stats',
    'null_count',
    'min',
    'max',
  ];
  if (!snapshot) return { columns, records: [] };
  const files = (await readLiveFiles(table.store, table.path, snapshot)).map((e) => e.file);
  const recordCount = files.reduce((n, f) => n + f.rowCount, 0);
  const firstKey = table.schema.primaryKeys[0];
  const records = table.schema.fields.map((field: DataField) => {
    let withStats = 0;
    let nulls: number | null = 0;
    let min: Value = null;
    let max: Value = null;
    for (const f of files) {
      let b: { min: Value; max: Value; nullCount: number | null } | undefined = columnBounds(f.valueStats, field);
      if (b === undefined && field.name === firstKey && f.minKey.length > 0) {
        // Files are sorted by key: the first key column's bounds are exact; nulls are not allowed in keys.
        b = { min: fromJsonValue(field.type, f.minKey[0]), max: fromJsonValue(field.type, f.maxKey[0]), nullCount: 0 };
      }
      if (b === undefined) continue;
      withStats++;
      nulls = nulls === null || b.nullCount === null ? null : nulls + b.nullCount;
      if (b.min !== null && (min === null || compareValues(field.type, b.min, min) < 0)) min = b.min;
      if (b.max !== null && (max === null || compareValues(field.type, b.max, max) > 0)) max = b.max;
    }
    const complete = withStats === files.length && files.length > 0;
    return {
      snapshot_id: snapshot.id,
      column: field.name,
      type: formatType(field.type),
      record_count: recordCount,
      file_count: files.length,
      files_with_stats: withStats,
      null_count: complete ? nulls : null,
      min: complete ? toDisplayValue(field.type, min) : null,
      max: complete ? toDisplayValue(field.type, max) : null,
    };
  });
  return { columns, records };
}

/** Live consumers, then expired ones with their tombstone (when and why; resuming them fails loudly). */
async function consumersTable(table: Table): Promise<SystemTableResult> {
  // skipped_snapshots: expired snapshots the consumer skipped under scan.on-expired=skip-to-earliest (lost to it).
  const columns = [
    'consumer_id',
    'next_snapshot_id',
    'last_updated',
    'status',
    'expired_at',
    'expired_reason',
    'skipped_snapshots',
  ];
  const [consumers, tombstones] = await Promise.all([
    listConsumers(table.store, table.path),
    listTombstones(table.store, table.path),
  ]);
  const live = new Set(consumers.map((c) => c.id));
  return {
    columns,
    records: [
      ...consumers.map((c) => ({
        consumer_id: c.id,
        next_snapshot_id: c.nextSnapshot,
        last_updated: iso(c.lastUpdated),
        status: 'active',
        expired_at: null,
        expired_reason: null,
        skipped_snapshots: c.gaps && c.gaps.length > 0 ? c.gaps.map(describeGap).join(', ') : null,
      })),
      ...tombstones
        .filter((t) => !live.has(t.id))
        .map((t) => ({
          consumer_id: t.id,
          next_snapshot_id: t.nextSnapshot,
          last_updated: iso(t.lastUpdated),
          status: 'expired',
          expired_at: iso(t.expiredAt),
          expired_reason: t.reason,
          skipped_snapshots: null,
        })),
    ],
  };
}
