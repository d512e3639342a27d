/**
 * The one declaration of every table option: key, type, default, one line of description and the
 * allowed values. Names and defaults are Paimon's (api/CoreOptions.java) wherever the concept is
 * the same. Validation, the typed getters and docs/OPTIONS.md are all derived from this list.
 */
import type { OptionType, OptionValue } from './option-values.js';
import type { TypeRoot } from './types.js';

/** A default computed from other options (e.g. `num-levels` = compaction trigger + 1). */
export interface DerivedDefault {
  /** How the docs state it. */
  text: string;
  /** Computes it; `get` returns other options' resolved values. */
  compute: (get: (key: string) => OptionValue | undefined) => OptionValue | undefined;
}

/** The declaration of one table option. */
export interface OptionDecl {
  key: string;
  type: OptionType;
  /** The default as a user would write it, a derived default, or undefined when the option has none. */
  default?: string | DerivedDefault;
  description: string;
  /** Values of an enum option. */
  allowed?: readonly string[];
  /** Bounds of a numeric option, inclusive. */
  min?: number;
  max?: number;
  /** Extra check of the parsed value; returns what is wrong, or undefined. */
  check?: (value: OptionValue) => string | undefined;
}

/** An option that exists once per column (or column list): `fields.<col>.<suffix>`. */
export interface FieldOptionDecl {
  suffix: string;
  /** How the docs write the key, e.g. `fields.<col>.aggregate-function`. */
  pattern: string;
  type: OptionType;
  default?: string;
  description: string;
  allowed?: readonly string[];
  /** True when `<col>` is a comma-separated list of columns (sequence groups). */
  columnList?: boolean;
}

/** `merge-engine` values. */
export const MERGE_ENGINES = ['deduplicate', 'partial-update', 'aggregation', 'first-row'] as const;
/** A `merge-engine` value. */
export type MergeEngine = (typeof MERGE_ENGINES)[number];

/** `changelog-producer` values. */
export const CHANGELOG_PRODUCERS = ['none', 'input', 'lookup', 'full-compaction'] as const;
/** A `changelog-producer` value. */
export type ChangelogProducer = (typeof CHANGELOG_PRODUCERS)[number];

/** `scan.mode` values. */
export const SCAN_MODES = [
  'latest-full',
  'latest',
  'full',
  'earliest',
  'compacted-full',
  'from-snapshot',
  'from-snapshot-full',
  'from-timestamp',
] as const;
/** A `scan.mode` value. */
export type ScanMode = (typeof SCAN_MODES)[number];

/** `file.compression` values (Parquet codecs). */
const FILE_COMPRESSIONS = ['zstd', 'lz4', 'snappy', 'uncompressed'] as const;

/** `parquet.writer.version` values: parquet-mr's short names and its enum names. */
const PARQUET_WRITER_VERSIONS = ['v1', 'v2', 'PARQUET_1_0', 'PARQUET_2_0'] as const;

/** `fields.<col>.aggregate-function` values. */
export const AGGREGATE_FUNCTIONS = [
  'sum',
  'product',
  'min',
  'max',
  'last_value',
  'last_non_null_value',
  'first_value',
  'first_non_null_value',
  'listagg',
  'bool_and',
  'bool_or',
  'count',
] as const;
/** A `fields.<col>.aggregate-function` value. */
export type AggregateFunction = (typeof AGGREGATE_FUNCTIONS)[number];

const NUMERIC: TypeRoot[] = ['TINYINT', 'SMALLINT', 'INT', 'BIGINT', 'FLOAT', 'DOUBLE', 'DECIMAL'];

/** Column types each aggregate function accepts; a function not listed takes every type. */
export const AGGREGATE_FUNCTION_TYPES: Partial<Record<AggregateFunction, readonly TypeRoot[]>> = {
  sum: NUMERIC,
  product: NUMERIC,
  count: ['TINYINT', 'SMALLINT', 'INT', 'BIGINT'],
  min: [...NUMERIC, 'STRING', 'DATE', 'TIMESTAMP'],
  max: [...NUMERIC, 'STRING', 'DATE', 'TIMESTAMP'],
  listagg: ['STRING'],
  bool_and: ['BOOLEAN'],
  bool_or: ['BOOLEAN'],
};

const sameAs = (key: string): DerivedDefault => ({ text: `\`${key}\``, compute: (get) => get(key) });

const incrementalBetween = (v: OptionValue): string | undefined =>
  (v as string[]).length === 2 ? undefined : 'give exactly two snapshot ids or tag names, e.g. "12,20"';

/** Every table option. */
export const TABLE_OPTIONS = [
  // Layout
  {
    key: 'bucket',
    type: 'int',
    default: '1',
    min: -1,
    max: 32768,
    check: (v) => (v === 0 ? 'use a number ≥ 1, or -1 for a bucket-unaware table without a primary key' : undefined),
    description:
      "Number of buckets per partition; a row goes to the bucket of its bucket key's frozen hash (docs/BUCKETING.md). Fixed buckets only for primary-key tables (Paimon's dynamic -1 and postpone -2 modes are not supported); a table without a primary key defaults to -1, bucket-unaware. Changing it (alter --set) applies to new partitions; existing ones keep their count until `varve rescale` rewrites them. At most 32,768 (Flink's largest parallelism): a bucket is an LSM tree with files of its own, and more buckets than writers and readers only make more, smaller files.",
  },
  {
    key: 'bucket-key',
    type: 'list',
    description:
      'Columns whose hash picks the bucket (unset: the primary key minus the partition keys); a subset of those. A table without a primary key needs it with bucket ≥ 1 (any non-partition columns). Immutable.',
  },
  {
    key: 'partition.default-name',
    type: 'string',
    default: '__DEFAULT_PARTITION__',
    check: (v) => ((v as string) === '' ? 'it cannot be empty' : undefined),
    description: 'Partition value used in paths for a NULL or empty partition column.',
  },
  {
    key: 'file.format',
    type: 'enum',
    default: 'parquet',
    allowed: ['parquet'],
    description: 'Data file format; varve writes Parquet only.',
  },
  {
    key: 'file.compression',
    type: 'enum',
    default: 'zstd',
    allowed: FILE_COMPRESSIONS,
    description:
      'Parquet compression codec of data and changelog files. `zstd` writes the smallest files; `lz4` (Parquet LZ4_RAW) decodes about 2× faster and writes about 1.8× faster in varve (parquet-wasm) for about 1.5× the bytes (docs/BENCHMARKS.md §2); readers from before 2022 may lack LZ4_RAW. Files of any codec stay readable after a change.',
  },
  // Parquet writer: Paimon hands its `parquet.*` table options to parquet-mr; varve honours those
  // parquet-wasm (parquet-rs) can, and refuses the others by name (UNSUPPORTED_OPTIONS).
  {
    key: 'parquet.enable.dictionary',
    type: 'boolean',
    description:
      "Dictionary encoding of every column's pages in new data and changelog files (unset: STRING columns only, varve's default, and in a compaction's output not a STRING column whose first rows are at least 90 % distinct values: a dictionary of them costs its hashing and saves nothing; Paimon's parquet-mr defaults to true for all). `parquet.enable.dictionary#<col>` sets one column. A dictionary shrinks repetitive columns, but a reader decodes a column chunk's whole dictionary page before any of its rows, so a key-range or point read of a few rows pays for it (docs/BENCHMARKS.md §8). The system columns never get one.",
  },
  {
    key: 'parquet.dictionary.page.size',
    type: 'memory',
    default: '1 mb',
    min: 1,
    max: 2147483647,
    description:
      "Most bytes of a column chunk's dictionary page; the chunk's values past it are written as plain pages (parquet-rs and parquet-mr alike). Smaller makes a read of a few rows decode less of each chunk, and files of many distinct strings larger (docs/BENCHMARKS.md §8).",
  },
  {
    key: 'parquet.page.size',
    type: 'memory',
    default: '1 mb',
    min: 1,
    max: 2147483647,
    description:
      "Target bytes of a data page, best effort (checked every 1,024 values, and within them for long strings); a page also ends at about 20,000 rows (parquet-mr's `parquet.page.row.count.limit` default, which parquet-wasm does not let varve change).",
  },
  {
    key: 'parquet.writer.version',
    type: 'enum',
    default: 'v1',
    allowed: PARQUET_WRITER_VERSIONS,
    description:
      "Data page format of new files: v1 (DATA_PAGE, read by every Parquet reader) or v2 (DATA_PAGE_V2, and parquet-rs's v2 fallback encodings such as DELTA_BYTE_ARRAY for strings past their dictionary; older readers may lack them; pyiceberg, through pyarrow, reads them in the Iceberg view, deletion vectors and compacted files included). parquet-mr's names PARQUET_1_0 and PARQUET_2_0 are accepted.",
  },
  {
    key: 'target-file-size',
    type: 'memory',
    default: '128 mb',
    min: 1,
    description: 'Size at which a writer or compaction rolls to a new data file.',
  },
  // Merging
  {
    key: 'merge-engine',
    type: 'enum',
    default: 'deduplicate',
    allowed: MERGE_ENGINES,
    description:
      'How the versions of one primary key become one row: keep the last, merge non-null columns, aggregate, or keep the first.',
  },
  {
    key: 'sequence.field',
    type: 'list',
    description:
      'Columns that order the versions of a key before the commit order (e.g. an event time), so late data cannot overwrite newer data.',
  },
  {
    key: 'sequence.field.sort-order',
    type: 'enum',
    default: 'ascending',
    allowed: ['ascending', 'descending'],
    description: 'Whether the largest (ascending) or the smallest (descending) `sequence.field` wins.',
  },
  {
    key: 'deletion-vectors.enabled',
    type: 'boolean',
    default: 'false',
    description:
      'Keep, per data file, a deletion vector (Iceberg `deletion-vector-v1` blobs in Puffin files) of the rows superseded by newer versions of their keys, exact at every snapshot, so reads decode each live file and drop its deleted rows instead of merging sorted runs. Primary-key tables with merge-engine deduplicate or first-row only (partial-update and aggregation combine several stored rows into one, so no stored row is the live one). Set it when creating the table (or on an empty one).',
  },
  {
    key: 'ignore-delete',
    type: 'boolean',
    default: 'false',
    description: 'Drop -D and -U records at write time instead of applying them.',
  },
  {
    key: 'partial-update.remove-record-on-delete',
    type: 'boolean',
    default: 'false',
    description:
      'partial-update: a -D record removes the whole row (otherwise deletes are rejected unless ignore-delete).',
  },
  {
    key: 'partial-update.remove-record-on-sequence-group',
    type: 'list',
    description: 'partial-update: sequence fields of sequence groups whose -D record removes the whole row.',
  },
  {
    key: 'aggregation.remove-record-on-delete',
    type: 'boolean',
    default: 'false',
    description: 'aggregation: a -D record removes the whole row instead of being retracted from each aggregate.',
  },
  {
    key: 'fields.default-aggregate-function',
    type: 'enum',
    allowed: AGGREGATE_FUNCTIONS,
    description:
      'Aggregate function of columns without `fields.<col>.aggregate-function` (unset: last_non_null_value).',
  },
  // Changelog
  {
    key: 'changelog-producer',
    type: 'enum',
    default: 'none',
    allowed: CHANGELOG_PRODUCERS,
    description:
      'Which changelog streaming readers get: none (the raw writes), input (the written records), lookup (exact -U/+U at compaction of level 0) or full-compaction (the difference between full compactions).',
  },
  {
    key: 'changelog-producer.row-deduplicate',
    type: 'boolean',
    default: 'false',
    description: 'lookup / full-compaction: emit no -U/+U pair when the new value equals the old one.',
  },
  // Writing
  {
    key: 'write-buffer-size',
    type: 'memory',
    default: '256 mb',
    min: 1,
    description:
      'Memory one writer buffers across all its buckets (one pool, as in Paimon): when full, the bucket holding the most spills a sorted run, or, not spillable, flushes a level-0 file early.',
  },
  {
    key: 'write-buffer-spillable',
    type: 'boolean',
    default: 'true',
    description: 'Whether a full write buffer spills sorted runs to local disk instead of flushing a small file.',
  },
  {
    key: 'write-buffer-spill.max-disk-size',
    type: 'memory',
    min: 1,
    description: 'Most local disk a writer spills to (unset: unlimited); keep it under the Lambda /tmp size.',
  },
  {
    key: 'dynamic-partition-overwrite',
    type: 'boolean',
    default: 'true',
    description:
      'An overwrite of a partitioned table replaces only the partitions its rows go to (false: the whole table).',
  },
  {
    key: 'write-only',
    type: 'boolean',
    default: 'false',
    description: 'Writers never compact or expire; a separate compaction function does it.',
  },
  // Compaction
  {
    key: 'num-sorted-run.compaction-trigger',
    type: 'int',
    default: '5',
    min: 1,
    description: 'Sorted runs in a bucket that trigger a compaction (universal compaction).',
  },
  {
    key: 'num-sorted-run.stop-trigger',
    type: 'int',
    default: {
      text: '`num-sorted-run.compaction-trigger` + 3',
      compute: (get) => (get('num-sorted-run.compaction-trigger') as number) + 3,
    },
    min: 1,
    description: 'Sorted runs in a bucket at which writers stall until compaction catches up.',
  },
  {
    key: 'num-levels',
    type: 'int',
    default: {
      text: '`num-sorted-run.compaction-trigger` + 1',
      compute: (get) => (get('num-sorted-run.compaction-trigger') as number) + 1,
    },
    min: 2,
    description: 'Levels of the LSM tree per bucket (level 0 holds flushed files).',
  },
  {
    key: 'compaction.memory-budget',
    type: 'memory',
    default: '256 mb',
    min: 1,
    description:
      'Memory the merge of one compaction section (and the lookup changelog producer) may hold: one row group per input file; beyond it, sorted runs are spilled to local disk (Lambda /tmp) and merged from there. With deletion vectors, the cache of decoded keys their maintenance keeps between commits holds at most a quarter of it.',
  },
  {
    key: 'compaction.max-size-amplification-percent',
    type: 'int',
    default: '200',
    min: 0,
    description: 'Full compaction when the runs above the last one exceed this percentage of its size.',
  },
  {
    key: 'compaction.min.file-num',
    type: 'int',
    default: '5',
    min: 2,
    description:
      'Append tables: small files (below target-file-size × 0.7) that must be adjacent in a bucket before they are compacted into one, unless together they reach target-file-size.',
  },
  {
    key: 'compaction.max.file-num',
    type: 'int',
    default: '50',
    min: 2,
    description:
      'Append tables: most adjacent small files compacted together, even if together they are below target-file-size.',
  },
  {
    key: 'compaction.size-ratio',
    type: 'int',
    default: '1',
    min: 0,
    description: 'Percentage of size difference within which neighbouring sorted runs are compacted together.',
  },
  {
    key: 'full-compaction.delta-commits',
    type: 'int',
    min: 1,
    description: 'Force a full compaction every this many commits (unset: only on demand or by size amplification).',
  },
  // Commit
  {
    key: 'commit.max-retries',
    type: 'int',
    default: '30',
    min: 0,
    description:
      'Times a commit that lost the race for the next snapshot id is retried (Paimon: 10; varve lets any number of writers share a table, and a lost race rewrites only the manifests and snapshot, never its data files).',
  },
  {
    key: 'commit.min-retry-wait',
    type: 'duration',
    default: '10 ms',
    description:
      'Shortest backoff between commit retries (each wait is drawn between this and three times the previous one: decorrelated jitter).',
  },
  {
    key: 'commit.max-retry-wait',
    type: 'duration',
    default: '10 s',
    description: 'Largest backoff between commit retries.',
  },
  {
    key: 'commit.identifier-retention',
    type: 'duration',
    default: '7 d',
    min: 1,
    description:
      'How long the index object of a commit identifier is kept once the snapshot holding the commit has expired; a retry of that identifier after both is not deduplicated any more (it commits again).',
  },
  {
    key: 'commit.timeout',
    type: 'duration',
    description: 'Give up retrying a commit after this long (unset: only the retry count limits it).',
  },
  {
    key: 'manifest.target-file-size',
    type: 'memory',
    default: '8 mb',
    min: 1,
    description: 'Size a commit merges small manifest files up to.',
  },
  {
    key: 'manifest.merge-min-count',
    type: 'int',
    default: '30',
    min: 1,
    description: 'Small manifest files that trigger a manifest merge at commit.',
  },
  {
    key: 'manifest.full-compaction-threshold-size',
    type: 'memory',
    default: '16 mb',
    min: 1,
    description:
      'Total size of manifests holding deletes or below the target size at which a commit rewrites them all without DELETE entries (full manifest compaction).',
  },
  // Expiry
  {
    key: 'snapshot.num-retained.min',
    type: 'int',
    default: '10',
    min: 1,
    description: 'Snapshots always kept, however old.',
  },
  {
    key: 'snapshot.num-retained.max',
    type: 'int',
    default: '2147483647',
    min: 1,
    description:
      'Snapshots kept at most, however young — except that expiry never removes a snapshot whose successor is less than a minute old (committers bet on a young snapshot still being there).',
  },
  {
    key: 'snapshot.time-retained',
    type: 'duration',
    default: '1 h',
    description:
      'Snapshots younger than this are kept (between the min and max counts); whatever this says, a snapshot whose successor is less than a minute old is kept (the expiry floor).',
  },
  {
    key: 'snapshot.expire.limit',
    type: 'int',
    default: '50',
    min: 1,
    description: 'Most snapshots one expiry run deletes.',
  },
  {
    key: 'changelog.num-retained.min',
    type: 'int',
    default: sameAs('snapshot.num-retained.min'),
    min: 1,
    description:
      'Snapshots whose changes stay streamable, counted from the latest (snapshots and long-lived changelogs together); larger than snapshot.num-retained.min, expiring a snapshot keeps its changelog (changelog/changelog-<id> and only the files a stream reads), not the snapshot.',
  },
  {
    key: 'changelog.num-retained.max',
    type: 'int',
    default: sameAs('snapshot.num-retained.max'),
    min: 1,
    description:
      'Snapshots whose changes stay streamable at most; older long-lived changelogs expire whatever their age.',
  },
  {
    key: 'changelog.time-retained',
    type: 'duration',
    default: sameAs('snapshot.time-retained'),
    description:
      'A long-lived changelog is kept while its successor is younger than this; longer than snapshot.time-retained keeps changelogs after their snapshots expire.',
  },
  {
    key: 'orphan-files.older-than',
    type: 'duration',
    default: '1 d',
    min: 1,
    description:
      'Orphan cleanup deletes only unreferenced files older than this (a safety window for commits in flight).',
  },
  {
    key: 'orphan-files.pending-time-retained',
    type: 'duration',
    default: '15 d',
    min: 1,
    description:
      'Orphan cleanup keeps the files of a batch handed to the group commit (registered under pending/) this long; keep it longer than the commit dead-letter queue retention (14 days), so a redriven commit still finds its files.',
  },
  {
    key: 'orphan-files.scan.max-keys',
    type: 'int',
    default: '100000',
    min: 1,
    description:
      'Most keys one bounded orphan scan lists (the scheduled safety-net scan on AWS, `varve remove-orphans --max-keys`); the next run resumes after the last key, from a marker object under `orphan/`.',
  },
  {
    key: 'ingest.deduplication-window',
    type: 'duration',
    default: '30 min',
    min: 1,
    description:
      'How far back ingestion looks through committed snapshots (their `varve.sources` and `varve.batches`) for a redelivered queue message, a duplicate inbox event or a re-sent commit batch, which then writes nothing. Cover the longest time a message can come back while its function polls: the ingest queue\'s maxReceiveCount × visibility timeout (5 × 6 min as deployed). Also bounded by snapshot retention (`snapshot.time-retained`) and by the last 2000 snapshots. Batches on their way through the commit queue and the commit identifiers of the commits themselves are found without a window (docs/AWS.md, "Why per-source deduplication has a window").',
  },
  // Iceberg compatibility (Paimon's metadata.iceberg.*)
  {
    key: 'metadata.iceberg.storage',
    type: 'enum',
    default: 'disabled',
    allowed: ['disabled', 'table-location', 'warehouse'],
    description:
      'Write Iceberg metadata after every commit that changes the highest level (full compaction, overwrite), so Iceberg readers (Athena, Spark, Trino, DuckDB, pyiceberg) read the table: in `<table>/metadata/` (table-location), in `<warehouse>/iceberg/<database>/<table>/metadata/` (warehouse, an Iceberg Hadoop-catalog warehouse), or not at all. Primary-key tables export only the files of the highest level: the state as of the last full compaction.',
  },
  {
    key: 'metadata.iceberg.format-version',
    type: 'int',
    default: '2',
    min: 2,
    max: 3,
    description:
      "Iceberg format version of the exported metadata: 2 (the default; a deletion-vector table exports a Parquet position delete file per vector, read by every Iceberg v2 reader) or 3 (deletion vectors: the manifests point into the table's own Puffin files, and the metadata tracks row lineage; read by Iceberg v3 readers only, see docs/ICEBERG.md). It may go from 2 to 3 on a table with an export, never back.",
  },
  // Consumers and streaming reads
  {
    key: 'consumer-id',
    type: 'string',
    description:
      'Consumer a streaming read records its progress under (consumer/consumer-<id>); expiry keeps what it has not read.',
  },
  {
    key: 'consumer.expiration-time',
    type: 'duration',
    description: 'A consumer not updated for this long is removed and no longer holds back expiry (unset: never).',
  },
  {
    key: 'consumer.tombstone-retention',
    type: 'duration',
    description:
      'How long the tombstone of an expired consumer is kept (resuming the id fails with ConsumerExpiredError while it exists). After it, expiry removes the tombstone and whatever the id left, and the id is free: resumed, it starts as a new consumer at `scan.mode`. Unset: kept forever, so an expired id never silently looks new.',
  },
  {
    key: 'consumer.ignore-progress',
    type: 'boolean',
    default: 'false',
    description: 'Start a streaming read from `scan.mode` even when its consumer has recorded progress.',
  },
  {
    key: 'scan.mode',
    type: 'enum',
    default: {
      text: 'latest-full; from-snapshot when `scan.snapshot-id` or `scan.tag-name` is set; from-timestamp when `scan.timestamp-millis` is set',
      compute: (get) =>
        get('scan.snapshot-id') !== undefined || get('scan.tag-name') !== undefined
          ? 'from-snapshot'
          : get('scan.timestamp-millis') !== undefined
            ? 'from-timestamp'
            : 'latest-full',
    },
    allowed: SCAN_MODES,
    description:
      'Where a read starts: the full latest state then changes (latest-full, full), only new changes (latest), the earliest snapshot, the full state of the latest compaction then changes (compacted-full: the latest COMPACT snapshot, else the latest), a given snapshot (then changes, or its full state then changes) or a timestamp.',
  },
  {
    key: 'scan.snapshot-id',
    type: 'long',
    min: 1,
    description: 'Snapshot a from-snapshot / from-snapshot-full read starts at (a batch read reads it: time travel).',
  },
  {
    key: 'scan.timestamp-millis',
    type: 'long',
    min: 0,
    description: 'Epoch milliseconds a from-timestamp read starts at: the first snapshot committed at or after it.',
  },
  { key: 'scan.tag-name', type: 'string', description: 'Tag a from-snapshot read starts at (time travel by tag).' },
  {
    key: 'scan.on-expired',
    type: 'enum',
    default: 'fail',
    allowed: ['fail', 'skip-to-earliest'],
    description:
      "When a read's start or next snapshot has expired: fail naming the lost range, or explicitly accept the gap and continue at the earliest snapshot.",
  },
  {
    key: 'streaming-read-overwrite',
    type: 'boolean',
    default: 'false',
    description:
      "Streams emit the changes of OVERWRITE snapshots (write --overwrite, truncate, drop-partition): -D/-U of the rows replaced, +I/+U of the new ones. false (Paimon's default): they are skipped, with an overwrite-skipped warning.",
  },
  {
    key: 'incremental-between',
    type: 'list',
    check: incrementalBetween,
    description:
      'Batch read of the changes between two snapshots (or tags), start exclusive: "s1,s2". `varve audit-log` reads them by default (`--incremental-between` per call, also with tags; `--incremental-between-timestamp T1,T2` by commit time); `read` and `count` refuse a table with it set, since in Paimon it makes a batch read a read of those changes.',
  },
  {
    key: 'incremental-between-scan-mode',
    type: 'enum',
    default: 'auto',
    allowed: ['auto', 'delta', 'changelog'],
    description:
      'What `incremental-between` reads: changelog files when the table has a changelog producer (auto), the written delta, or the changelog.',
  },
  {
    key: 'continuous.discovery-interval',
    type: 'duration',
    default: '10 s',
    min: 1,
    description:
      'How often the local runtime looks for new snapshots for streaming consumers (on AWS discovery also runs after each commit).',
  },
] as const satisfies readonly OptionDecl[];

/** Every per-column option. */
export const FIELD_OPTIONS: readonly FieldOptionDecl[] = [
  {
    suffix: 'aggregate-function',
    pattern: 'fields.<col>.aggregate-function',
    type: 'enum',
    allowed: AGGREGATE_FUNCTIONS,
    description:
      "aggregation (and partial-update sequence groups): how the column's values of one key are combined; must fit the column type (sum, product on numbers; count on integers; min, max on ordered types; listagg on strings; bool_and, bool_or on booleans).",
  },
  {
    suffix: 'ignore-retract',
    pattern: 'fields.<col>.ignore-retract',
    type: 'boolean',
    default: 'false',
    description: 'aggregation: -U/-D records leave the column unchanged instead of retracting from it.',
  },
  {
    suffix: 'list-agg-delimiter',
    pattern: 'fields.<col>.list-agg-delimiter',
    type: 'string',
    default: ',',
    description: 'listagg: the text put between concatenated values.',
  },
  {
    suffix: 'sequence-group',
    pattern: 'fields.<c1>,<c2>.sequence-group',
    type: 'list',
    columnList: true,
    description:
      'partial-update: the listed columns (the value) are updated only by records whose c1,c2 are not older than the stored ones.',
  },
];

/** A Parquet writer option with a per-column form, `<key>#<col>` (parquet-mr's column form, which Paimon passes through). */
export interface ColumnFormOptionDecl {
  /** The table-wide option it narrows. */
  key: string;
  /** How the docs write the key, e.g. `parquet.enable.dictionary#<col>`. */
  pattern: string;
  type: OptionType;
  description: string;
}

/** Every per-column form of a Parquet writer option. */
export const COLUMN_FORM_OPTIONS: readonly ColumnFormOptionDecl[] = [
  {
    key: 'parquet.enable.dictionary',
    pattern: 'parquet.enable.dictionary#<col>',
    type: 'boolean',
    description:
      'Dictionary encoding of one column of the table in new files, over `parquet.enable.dictionary` (e.g. `parquet.enable.dictionary#name=false` for a column of mostly distinct strings read by key range). Follows a renamed column; removed with a dropped one.',
  },
];

/**
 * Options that may not change once a table has data, with the reason shown to users: each one
 * changes where rows live or how the stored versions of a key combine, so old files would no
 * longer mean what they meant when written.
 */
export const FIXED_OPTIONS: Readonly<Record<string, string>> = {
  'bucket-key': 'every stored key would hash to another bucket',
  'merge-engine': 'the stored versions of each key were written to be combined by the current engine',
  'deletion-vectors.enabled':
    "deletion vectors are kept from a table's first commit on; create a new table with the option and copy the rows into it (varve read … | varve write …)",
  'sequence.field': 'stored versions were ordered by it; a new order would change which version wins',
  'sequence.field.sort-order': 'stored versions were ordered by it; a new order would change which version wins',
  'partition.default-name': 'existing partition paths use the current name',
  'file.format': 'existing data files are in the current format',
  'fields.default-aggregate-function': 'stored partial aggregates were computed with the current function',
};
/** Per-column options (by suffix) fixed at creation, with the reason. */
export const FIXED_FIELD_OPTIONS: Readonly<Record<string, string>> = {
  'aggregate-function': 'stored partial aggregates were computed with the current function',
  'sequence-group': 'stored versions were combined by the current sequence groups',
};

/** Paimon options that varve deliberately does not support, with the reason given to users. */
export const UNSUPPORTED_OPTIONS: Readonly<Record<string, string>> = {
  'dynamic-bucket.target-row-num': 'varve supports fixed buckets only; set `bucket` to a number ≥ 1',
  'dynamic-bucket.max-buckets': 'varve supports fixed buckets only; set `bucket` to a number ≥ 1',
  'bucket-function.type': 'the bucket function is frozen (docs/BUCKETING.md)',
  'rowkind.field': 'give the row kind per record (`_kind` in JSONL input) instead',
  'parquet.compression': 'set the codec with `file.compression` (zstd, lz4, snappy or uncompressed)',
  'parquet.block.size':
    'varve ends row groups by row count (65,536 rows in written files, 131,072 in compacted ones), and parquet-wasm checks a byte limit only between the 65,536-row batches varve hands it, so the limit would mostly go unheeded',
  'parquet.page.row.count.limit':
    "parquet-wasm does not expose parquet-rs's page row limit; pages already end at about 20,000 rows, parquet-mr's default",
  'parquet.bloom.filter.enabled': 'parquet-wasm does not write bloom filters',
  'parquet.bloom.filter.expected.ndv': 'parquet-wasm does not write bloom filters',
  'parquet.bloom.filter.fpp': 'parquet-wasm does not write bloom filters',
  'parquet.bloom.filter.max.bytes': 'parquet-wasm does not write bloom filters',
};

/** The key of a table option (not a per-column `fields.<col>.…` one). */
export type OptionKey = (typeof TABLE_OPTIONS)[number]['key'];
type DeclOf<K extends OptionKey> = Extract<(typeof TABLE_OPTIONS)[number], { key: K }>;
/** The parsed type of a declaration: numbers for int/long/duration (ms)/memory (bytes), the allowed values of an enum. */
type ParsedType<D> = D extends { type: 'int' | 'long' | 'duration' | 'memory' }
  ? number
  : D extends { type: 'boolean' }
    ? boolean
    : D extends { type: 'list' }
      ? string[]
      : D extends { type: 'enum'; allowed: readonly (infer A)[] }
        ? A
        : string;
/** The value `get(key)` returns: undefined only for an option without a default (lists are empty instead). */
export type OptionValueOf<K extends OptionKey> =
  DeclOf<K> extends { default: unknown } | { type: 'list' } ? ParsedType<DeclOf<K>> : ParsedType<DeclOf<K>> | undefined;

/** `write-buffer-size` → `writeBufferSize`, `commit.min-retry-wait` → `commitMinRetryWait`. */
type CamelCase<S extends string> = S extends `${infer A}-${infer B}`
  ? `${CamelCase<A>}${Capitalize<CamelCase<B>>}`
  : S extends `${infer A}.${infer B}`
    ? `${CamelCase<A>}${Capitalize<CamelCase<B>>}`
    : S;

/** One typed, read-only property per table option, named after its key in camel case; derived from the catalog. */
export type OptionProperties = { readonly [K in OptionKey as CamelCase<K>]: OptionValueOf<K> };
