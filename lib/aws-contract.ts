/**
 * What the handlers (functions/) and the constructs (infra/) agree on, declared once below both:
 * the names the handlers emit and the infra matches on: custom metric names (infra/alarms.ts) and
 * EventBridge source and detail-types (infra/stream-consumer.ts). Declared once, here, without
 * imports, so the CDK constructs use them without loading the handlers' SDKs.
 */

/**
 * The custom metrics the handlers emit (Powertools Metrics, namespace `Varve`). Powertools adds
 * `service` (= POWERTOOLS_SERVICE_NAME, 'varve' for every function) to every metric's
 * dimensions, so the alarms match on `service` plus the dimensions listed here; a metric with
 * other dimensions would be another metric to CloudWatch.
 */
export const VARVE_METRICS = {
  /** Milliseconds from the start of a commit to its snapshot being created; dimension `table`. */
  commitLatencyMs: 'CommitLatencyMs',
  /** Commit attempts that lost the race on a snapshot id (412); dimension `table`. */
  commitConflicts: 'CommitConflicts',
  /** Sorted runs of one bucket, emitted per bucket written or compacted; dimension `table`. */
  sortedRuns: 'SortedRuns',
  /** Snapshots committed but not yet delivered to a consumer; dimensions `table`, `consumer`. */
  consumerLagSnapshots: 'ConsumerLagSnapshots',
  /** Age in seconds of the oldest undelivered snapshot; dimensions `table`, `consumer`. */
  consumerLagSeconds: 'ConsumerLagSeconds',
  /** 1 each time discovery meets its consumer id expired (a tombstone, ConsumerExpiredError): the consumer has stopped; dimensions `table`, `consumer`. */
  consumerExpired: 'ConsumerExpired',
  /**
   * Snapshots a consumer skipped because they had expired before it read them (accepted with
   * `scan.on-expired = skip-to-earliest`): their changes never reach its sink; dimensions `table`, `consumer`.
   */
  consumerSnapshotsSkipped: 'ConsumerSnapshotsSkipped',
} as const;

/** The Powertools service name of every varve function; metrics carry it as the `service` dimension. */
export const VARVE_SERVICE_NAME = 'varve';

/** The CloudWatch namespace of varve's custom metrics (POWERTOOLS_METRICS_NAMESPACE). */
export const VARVE_METRICS_NAMESPACE = 'Varve';

/** The `source` of every varve event. */
export const VARVE_EVENT_SOURCE = 'varve';
/** The detail-type of the event put after each commit (each consumer's discovery rule matches on it). */
export const SNAPSHOT_COMMITTED = 'Snapshot Committed';

/** How a writer hands its files on: `direct` commits itself, `queue` sends them to the table's commit FIFO queue. */
export type CommitMode = 'direct' | 'queue';

/**
 * The tags the constructs put on each queue that has a dead-letter queue (and on that DLQ, with
 * `varve:dead-letter` = `true`), so that `varve redrive` finds them by warehouse, table and queue
 * (two warehouses may hold tables of the same name in one account and region).
 */
export const VARVE_QUEUE_TAGS = {
  warehouse: 'varve:warehouse',
  table: 'varve:table',
  queue: 'varve:queue',
  consumer: 'varve:consumer',
  deadLetter: 'varve:dead-letter',
} as const;
