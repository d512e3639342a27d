/**
 * varve's front door for TypeScript users (`import … from 'varve'`). Everything exported here is
 * the supported API; every other module is internal and may change. The AWS handlers are in
 * `varve/aws`, the CDK constructs in `varve/cdk`.
 *
 * @example
 * const catalog = openCatalog('./warehouse');
 * const orders = await catalog.createTable('shop.orders', {
 *   fields: parseSchemaText('order_id BIGINT, status STRING'),
 *   primaryKeys: ['order_id'],
 * });
 * await orders.write([{ order_id: 1n, status: 'paid' }]);
 * const rows = await orders.read();
 */

// Catalogs and tables.
export { openCatalog, type CatalogEnv } from './catalog/open-catalog.js';
export type { Catalog, CreateTableRequest } from './catalog/catalog.js';
export { FolderCatalog } from './catalog/folder-catalog.js';
export { DynamoCatalog } from './catalog/dynamo-catalog.js';
export { openStore } from './store/open-store.js';
export type { ObjectStore } from './store/object-store.js';
export { parseSchemaText, parseSchemaJson, formatSchemaText } from './schema/parse.js';
export { RowKind, type DataField, type DataType, type Row, type TableSchema, type Value } from './schema/types.js';

// Writing and reading.
export { Table } from './table/table.js';
export type { TableWriter, CommitResult, WriterOptions } from './table/writer.js';
export {
  runWriteJob,
  type WriteJobSource,
  type WriteJobOptions,
  type WriteJobProgress,
  type WriteJobResult,
} from './table/write-job.js';
export { configureEncoderPool } from './format/encoder-pool.js';
export type { ReadOptions } from './table/read.js';
export type { SnapshotSpec } from './table/time-travel.js';
export type { Snapshot } from './snapshot/snapshot.js';
export { readAuditLog, type AuditLogOptions } from './table/audit-log.js';
export { readSystemTable, SYSTEM_TABLES, type SystemTableName, type SystemTableResult } from './table/system-tables.js';
export { createTag, deleteTag, listTags, type NamedTag } from './snapshot/tags.js';

// Streams and consumers.
export { StreamScan, type StreamPlan } from './stream/stream-scan.js';
export type { StreamOptions } from './stream/stream-options.js';
export { callbackSink, jsonlSink, tableSink, type Change, type TableSinkOptions } from './stream/sinks.js';
export type { ChangeBatch, StreamSink } from './stream/delivery.js';
export { readConsumer, listConsumers, deleteConsumer, type Consumer } from './snapshot/consumer.js';
export { LocalRuntime, type ConsumerSpec, type LocalRuntimeOptions } from './runtime/local-runtime.js';
export { SPLIT_BACKOFF, type Backoff } from './stream/split-policy.js';

// Maintenance.
export { compactTable, type CompactTableOptions, type CompactionSummary } from './maintenance/compact.js';
export { rollbackTo, type RollbackTarget, type RollbackResult } from './maintenance/rollback.js';
export {
  expireSnapshots,
  type ExpireSnapshotsOptions,
  type ExpireSnapshotsResult,
} from './maintenance/expire-snapshots.js';
export {
  expireConsumers,
  type ExpireConsumersOptions,
  type ExpireConsumersResult,
} from './maintenance/expire-consumers.js';
export {
  removeOrphanFiles,
  type RemoveOrphansOptions,
  type RemoveOrphansResult,
} from './maintenance/remove-orphans.js';
export { verifyTable, type TableVerification, type TableProblem } from './maintenance/verify-table.js';

// Errors: every error varve throws is a VarveError with a `kind` and whether it is retryable.
export * from './errors.js';
