/**
 * The error taxonomy of varve. Every error a user can cause or meet is one of these: it has a
 * stable `name`, a `kind`, says whether retrying the same call can help (`retryable`), and its
 * message says what was wrong and what to do. `cause` is forwarded when one error wraps another.
 */

export type ErrorKind =
  | 'invalid-argument'
  | 'not-found'
  | 'already-exists'
  | 'conflict'
  | 'precondition'
  | 'expired'
  | 'corrupt'
  | 'unavailable'
  | 'injected';

/** Base class of every varve error. */
export class VarveError extends Error {
  readonly kind: ErrorKind;
  readonly retryable: boolean;
  constructor(message: string, opts: { kind?: ErrorKind; retryable?: boolean; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = new.target.name;
    this.kind = opts.kind ?? 'invalid-argument';
    this.retryable = opts.retryable ?? false;
  }
}

/** A user supplied something malformed: an option, a name, a flag, a value. */
export class InvalidArgumentError extends VarveError {
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, { kind: 'invalid-argument', ...opts });
  }
}

/** A schema text or JSON that cannot be parsed or is inconsistent (duplicate column, bad key, …). */
export class SchemaError extends VarveError {
  constructor(
    message: string,
    readonly field?: string,
    opts: { cause?: unknown } = {},
  ) {
    super(message, { kind: 'invalid-argument', ...opts });
  }
}

/** An unknown table option or a value of the wrong type; names the option and what is allowed. */
export class OptionError extends VarveError {
  constructor(
    message: string,
    readonly option: string,
  ) {
    super(message, { kind: 'invalid-argument' });
  }
}

/** A record that does not fit the table's schema; carries the 1-based input line and the field. */
export class RecordValidationError extends VarveError {
  constructor(
    message: string,
    readonly line?: number,
    readonly field?: string,
  ) {
    super(message, { kind: 'invalid-argument' });
  }
}

/** A record's data does not match the schema it is read with (type or column mismatch). */
export class SchemaMismatchError extends VarveError {
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message, { kind: 'invalid-argument' });
  }
}

/** An object that does not exist in the store. */
export class ObjectNotFoundError extends VarveError {
  constructor(
    readonly key: string,
    opts: { cause?: unknown } = {},
  ) {
    super(`object not found: ${key}`, { kind: 'not-found', ...opts });
  }
}

/** S3 answered 409 ConditionalRequestConflict: a concurrent operation was in flight; retry as is. */
export class ConditionalRequestConflictError extends VarveError {
  constructor(
    readonly key: string,
    opts: { cause?: unknown } = {},
  ) {
    super(`concurrent conditional request on ${key}; retry`, { kind: 'conflict', retryable: true, ...opts });
  }
}

/** The object store failed in a way that may heal (throttling, network, 5xx). */
export class StoreUnavailableError extends VarveError {
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, { kind: 'unavailable', retryable: true, ...opts });
  }
}

/**
 * The store refused a write for a reason no retry heals: a full disk (ENOSPC, EDQUOT), a read-only
 * file system (EROFS), missing permission (EACCES, EPERM). Names the cause (`code`) and the path.
 */
export class StoreRefusedError extends VarveError {
  constructor(
    message: string,
    readonly code: string,
    readonly path: string,
    opts: { cause?: unknown } = {},
  ) {
    super(message, { kind: 'unavailable', retryable: false, ...opts });
  }
}

/** A key that is not a safe relative path inside the store root. */
export class InvalidKeyError extends InvalidArgumentError {}

/** A commit that truly conflicts with what another commit did (not a lost race): re-plan, never retry blindly. */
export class CommitConflictError extends VarveError {
  constructor(
    message: string,
    readonly details: { snapshotId?: number; files?: string[] } = {},
  ) {
    super(message, { kind: 'conflict', retryable: false });
  }
}

/**
 * The table's schema changed after a writer (or reader) planned with an older one: `fromSchemaId`
 * is what it planned with, `toSchemaId` the table's schema now. Reopen the table and plan again.
 */
export class SchemaChangedError extends CommitConflictError {
  constructor(
    message: string,
    readonly fromSchemaId: number,
    readonly toSchemaId: number,
  ) {
    super(message);
  }
}

/**
 * A commit adds a file written for another bucket count than its partition's live files have
 * (`liveBuckets` in `snapshotId`): the writer routed the partition by a snapshot older than a
 * rescale, rollback or truncate another writer committed. Nothing was committed; the rows are
 * routed again by the snapshot named and written anew (Table.write does so by itself).
 */
export class StaleBucketCountError extends CommitConflictError {
  constructor(
    message: string,
    readonly partition: string,
    readonly liveBuckets: number,
    readonly writtenBuckets: number,
    details: { snapshotId?: number; files?: string[] },
  ) {
    super(message, details);
  }
}

/**
 * A retried step (lib/retry-budget.ts) that kept failing for reasons a retry may heal (a lost race,
 * a busy store) until its budget of retries or time ran out; `retries` is the number it made.
 */
export class RetriesExhaustedError extends VarveError {
  constructor(
    message: string,
    readonly retries: number,
    opts: { cause?: unknown } = {},
  ) {
    super(message, { kind: 'conflict', retryable: true, ...opts });
  }
}

/** A commit that kept losing the race for the next snapshot id until its retry budget ran out. */
export class CommitRetriesExhaustedError extends RetriesExhaustedError {}

/**
 * A commit identifier whose earlier attempt cannot be confirmed or ruled out any more (the snapshot
 * it was creating has expired before the commit was recorded): retrying could commit twice.
 */
export class CommitIdentifierAmbiguousError extends VarveError {
  constructor(
    message: string,
    readonly identifier: string,
    readonly snapshotId: number,
  ) {
    super(message, { kind: 'precondition' });
  }
}

/** A snapshot id, timestamp or tag that does not resolve; names the available range. */
export class SnapshotNotFoundError extends VarveError {
  constructor(
    message: string,
    readonly available?: { earliest: number; latest: number },
  ) {
    super(message, { kind: 'not-found' });
  }
}

/**
 * A position whose snapshots have expired: the changes in `lostRange` (from inclusive, to exclusive)
 * can no longer be read. Raised instead of silently skipping ahead.
 */
export class SnapshotExpiredError extends VarveError {
  constructor(
    message: string,
    readonly lostRange: { from: number; to: number },
  ) {
    super(message, { kind: 'expired' });
  }
}

/**
 * A consumer id that expired (`consumer.expiration-time`) and is being resumed: the changes from
 * `lastPosition` on may be lost (`lostRange`, from inclusive, to exclusive, when known). Raised
 * instead of starting the id again as a new consumer.
 */
export class ConsumerExpiredError extends VarveError {
  constructor(
    message: string,
    readonly consumerId: string,
    readonly lastPosition: number,
    readonly lostRange?: { from: number; to: number },
  ) {
    super(message, { kind: 'expired' });
  }
}

/**
 * A consumer id held by another reader group (its lease has not expired): two readers of one id
 * would each see an incomplete stream. Names the holder and when its lease ends.
 */
export class ConsumerLeaseHeldError extends VarveError {
  constructor(
    message: string,
    readonly holder: { host: string; pid: number; readerId: string },
    readonly expiresAt: number,
  ) {
    super(message, { kind: 'conflict' });
  }
}

/** This reader's lease on a consumer was taken over (or ran out): it must stop delivering and recording progress. */
export class ConsumerLeaseLostError extends VarveError {
  constructor(message: string) {
    super(message, { kind: 'conflict' });
  }
}

/**
 * A split reader found its bucket held by another delivery of the same consumer (a redelivered
 * split whose first delivery still runs in another process or Lambda container): it delivers
 * nothing now, and its message comes back after the holder finished or its hold ran out.
 */
export class SplitFenceHeldError extends VarveError {
  constructor(
    message: string,
    readonly holder: string,
    readonly expiresAt: number,
  ) {
    super(message, { kind: 'conflict', retryable: true });
  }
}

/** A split reader's hold on its bucket ran out or was taken by a newer delivery: it records no progress. */
export class SplitFenceLostError extends VarveError {
  constructor(message: string) {
    super(message, { kind: 'conflict', retryable: true });
  }
}

/** A table name that does not exist in the catalog. */
export class TableNotFoundError extends VarveError {
  constructor(
    readonly table: string,
    detail?: string,
  ) {
    super(
      detail ?? `table ${table} does not exist; list tables with \`varve tables\` or create it with \`varve create\``,
      {
        kind: 'not-found',
      },
    );
  }
}

/** A table that already exists where a new one was asked for. */
export class TableAlreadyExistsError extends VarveError {
  constructor(readonly table: string) {
    super(`table ${table} already exists; drop it first or pick another name`, { kind: 'already-exists' });
  }
}

/** A tag name that does not exist, or one that already exists on create. */
export class TagError extends VarveError {
  constructor(message: string, kind: ErrorKind = 'not-found') {
    super(message, { kind });
  }
}

/**
 * Metadata (a file varve saved, or a message it sent itself) that cannot be parsed, has the wrong
 * shape, or is inconsistent with itself. Not retryable: reading it again gives the same bytes. The
 * message names the file (`file`, its full location, when known) and what was wrong; what to do is
 * to restore the file, or to remove what it belongs to as the message says.
 */
export class CorruptMetadataError extends VarveError {
  readonly file?: string;
  constructor(message: string, opts: { cause?: unknown; file?: string } = {}) {
    super(message, { kind: 'corrupt', retryable: false, ...(opts.cause === undefined ? {} : { cause: opts.cause }) });
    if (opts.file !== undefined) this.file = opts.file;
  }
}

/**
 * A data or changelog file whose bytes do not match the checksums recorded when it was written
 * (its footer against its manifest entry, a column chunk against its footer): it was damaged at
 * rest or in a copy. Never retryable: the bytes read back the same. Nothing is decoded from it.
 */
export class DataFileChecksumError extends VarveError {
  constructor(
    readonly file: string,
    readonly table: string | undefined,
    readonly detail: string,
  ) {
    super(
      `data file ${file}${table === undefined ? '' : ` of table ${table}`} is damaged: ${detail}. Its bytes changed after varve wrote them; nothing was read from it. ` +
        'Restore the file from a copy, or roll the table back to a snapshot that does not reference it (`varve verify` lists every damaged file)',
      { kind: 'corrupt', retryable: false },
    );
  }
}

/**
 * A queued batch whose data files are gone (deleted by orphan cleanup or expiry while its commit
 * message waited, e.g. in a dead-letter queue): committing it would make a snapshot reference
 * missing files, so it is refused before it commits.
 */
export class CommitFilesMissingError extends VarveError {
  constructor(
    readonly commitIdentifier: string,
    readonly missing: string[],
  ) {
    super(
      `the batch ${commitIdentifier} lists ${missing.length} file(s) that no longer exist (first: ${missing[0]}); ` +
        'it was refused so that no snapshot references missing files. Its rows are lost to this table: ingest their source again',
      { kind: 'not-found', retryable: false },
    );
  }
}

/**
 * A batch some of whose sources (not all) landed before in other batches: the same input delivered
 * twice at once in two batch compositions (lib/table/group-commit.ts, "What is guaranteed"). A batch keeps no
 * record of which rows came from which source, so it cannot be committed without landing those
 * sources' rows twice; it is refused whole and committed nothing. `landed` maps each source that
 * had landed to the snapshot holding it (undefined: an earlier batch of the same group commit);
 * `others` are the sources whose rows are now in no snapshot and must be ingested again.
 */
export class PartiallyLandedError extends VarveError {
  constructor(
    readonly commitIdentifier: string,
    readonly landed: ReadonlyMap<string, number | undefined>,
    readonly others: readonly string[],
  ) {
    const where = [...landed].map(([s, at]) => (at === undefined ? s : `${s} (snapshot ${at})`));
    super(
      `the batch ${commitIdentifier} holds the rows of ${landed.size + others.length} sources, ${landed.size} of which ` +
        `landed before in another batch: ${shortList(where)}. A batch's rows are not kept apart by source, so ` +
        'committing it would land those rows twice (on a primary-key table, an older row would win over a newer ' +
        `update of its key); it was refused and committed nothing. Ingest its other ${others.length} source(s) ` +
        `again: ${shortList(others)}`,
      { kind: 'conflict', retryable: false },
    );
  }
}

function shortList(xs: readonly string[]): string {
  return xs.length > 10 ? `${xs.slice(0, 10).join(', ')} and ${xs.length - 10} more` : xs.join(', ');
}

/** A writer refused because a bucket has more sorted runs than `num-sorted-run.stop-trigger`. */
export class WriteStallError extends VarveError {
  constructor(message: string) {
    super(message, { kind: 'unavailable', retryable: true });
  }
}

/**
 * A Parquet encoder worker thread died (crashed, ran out of memory, was terminated) while it held
 * data files of a write: those files are lost, so the write fails and nothing of it is committed.
 */
export class EncoderWorkerError extends VarveError {
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, { kind: 'unavailable', retryable: false, ...opts });
  }
}

/**
 * A Parquet decoder worker thread died (crashed, ran out of memory, was terminated) while it
 * decoded row groups of a read: the read fails rather than return fewer rows.
 */
export class DecoderWorkerError extends VarveError {
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, { kind: 'unavailable', retryable: false, ...opts });
  }
}

/** A fault injected by a test store; never raised in production. */
export class InjectedFaultError extends VarveError {
  constructor(message: string, opts: { retryable?: boolean } = {}) {
    super(message, { kind: 'injected', retryable: opts.retryable ?? false });
  }
}

/** True when `e` is a varve error that says retrying the same call can succeed. */
export function isRetryable(e: unknown): boolean {
  return e instanceof VarveError && e.retryable;
}

/** The Iceberg metadata export of a table could not be written or read; the next commit or `varve export-iceberg` redoes it. */
export class IcebergExportError extends VarveError {
  constructor(message: string, opts: { cause?: unknown; retryable?: boolean } = {}) {
    super(message, { kind: 'corrupt', retryable: opts.retryable ?? true, cause: opts.cause });
  }
}
