/**
 * The object store on S3 (or moto, LocalStack, any S3 endpoint set through AWS_ENDPOINT_URL).
 * Create-only is PutObject with `If-None-Match: *`, compare-and-swap is PutObject with
 * `If-Match: <etag>`; S3 checks the condition atomically with the write.
 */
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import {
  ConditionalRequestConflictError,
  InvalidArgumentError,
  ObjectNotFoundError,
  StoreUnavailableError,
} from '../errors.js';
import { RetryBudget } from '../retry-budget.js';
import { checkByteRange } from './byte-range.js';
import { checkKeyPrefix, checkObjectKey } from './object-key.js';
import type { ListOptions, ObjectInfo, ObjectStore, ObjectUpload, StoredObject } from './object-store.js';
import { checkPartSize, S3_DEFAULT_PART_SIZE, S3Upload } from './s3-upload.js';
import {
  awsSetupProblem,
  s3Attempts,
  s3ErrorName,
  s3IsAccessDenied,
  s3IsNoSuchKey,
  s3IsTransient,
  s3Status,
} from './s3-errors.js';
import { decorateAwsClient } from './client-decorator.js';

/** Where an `S3Store` keeps its objects, and how it retries 409 conflicts. */
export interface S3StoreOptions {
  bucket: string;
  /** Folder inside the bucket; leading and trailing slashes are ignored. */
  prefix?: string;
  /** Default: `defaultS3Client()`. */
  client?: S3Client;
  /** How many times a 409 ConditionalRequestConflict is retried before it is thrown; default 3. */
  conflictRetries?: number;
  /** First backoff between 409 retries in ms (doubling, jittered); default 50. */
  conflictBackoffMs?: number;
  /** Bytes per part of a multipart upload (`upload`); at least 5 MiB, default 8 MiB. */
  multipartPartSize?: number;
}

/**
 * An S3 client configured from the environment. With an endpoint override (AWS_ENDPOINT_URL_S3 or
 * AWS_ENDPOINT_URL, e.g. moto or LocalStack) it uses path-style URLs, because virtual-hosted
 * `bucket.localhost` does not resolve; the endpoint itself the SDK reads from the environment.
 */
export function defaultS3Client(): S3Client {
  const override = process.env.AWS_ENDPOINT_URL_S3 ?? process.env.AWS_ENDPOINT_URL;
  return decorateAwsClient(new S3Client({ forcePathStyle: Boolean(override) }));
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** An object store under `s3://bucket/prefix`. */
export class S3Store implements ObjectStore {
  readonly bucket: string;
  /** The key prefix inside the bucket, without leading or trailing slash ('' for the bucket root). */
  readonly prefix: string;
  readonly client: S3Client;
  readonly uri: string;
  private readonly conflictRetries: number;
  private readonly conflictBackoffMs: number;
  private readonly partSize: number;

  constructor(opts: S3StoreOptions) {
    if (typeof opts.bucket !== 'string' || opts.bucket === '' || /[/\s]/.test(opts.bucket)) {
      throw new InvalidArgumentError(
        `invalid S3 bucket name ${JSON.stringify(opts.bucket)}: pass the bare bucket name, e.g. { bucket: "my-warehouse" }`,
      );
    }
    this.bucket = opts.bucket;
    const prefix = (opts.prefix ?? '').replace(/^\/+|\/+$/g, '');
    this.prefix = prefix === '' ? '' : checkObjectKey(prefix);
    this.client = opts.client ?? defaultS3Client();
    this.uri = `s3://${this.bucket}${this.prefix ? `/${this.prefix}` : ''}`;
    this.conflictRetries = opts.conflictRetries ?? 3;
    this.conflictBackoffMs = opts.conflictBackoffMs ?? 50;
    this.partSize = checkPartSize(opts.multipartPartSize ?? S3_DEFAULT_PART_SIZE);
  }

  async get(key: string): Promise<StoredObject> {
    const Key = this.s3Key(key);
    try {
      const r = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key }));
      const body = r.Body ? await r.Body.transformToByteArray() : new Uint8Array(0);
      return { body, etag: this.etagOf(r.ETag, key), lastModified: r.LastModified?.getTime() ?? 0 };
    } catch (e) {
      if (s3IsNoSuchKey(e)) throw new ObjectNotFoundError(key, { cause: e });
      throw this.mapError(e, 'get', key);
    }
  }

  async getRange(key: string, start: number, end: number): Promise<Uint8Array> {
    checkByteRange(key, start, end);
    const Key = this.s3Key(key);
    if (start === end) {
      // An empty range cannot be expressed as an HTTP Range; still report a missing object.
      if (!(await this.head(key))) throw new ObjectNotFoundError(key);
      return new Uint8Array(0);
    }
    try {
      const Range = `bytes=${start}-${end - 1}`; // HTTP ranges are inclusive
      const r = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key, Range }));
      return r.Body ? await r.Body.transformToByteArray() : new Uint8Array(0);
    } catch (e) {
      if (s3IsNoSuchKey(e)) throw new ObjectNotFoundError(key, { cause: e });
      // 416: the object exists and `start` lies at or past its end; ranges clamp to the size.
      if (s3Status(e) === 416) return new Uint8Array(0);
      throw this.mapError(e, 'getRange', key);
    }
  }

  async head(key: string): Promise<(ObjectInfo & { etag: string }) | undefined> {
    const Key = this.s3Key(key);
    try {
      const r = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key }));
      return {
        key,
        size: r.ContentLength ?? 0,
        lastModified: r.LastModified?.getTime() ?? 0,
        etag: this.etagOf(r.ETag, key),
      };
    } catch (e) {
      if (s3IsNoSuchKey(e)) return undefined;
      throw this.mapError(e, 'head', key);
    }
  }

  async put(key: string, body: Uint8Array): Promise<{ etag: string }> {
    const Key = this.s3Key(key);
    try {
      const r = await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key, Body: body }));
      return { etag: this.etagOf(r.ETag, key) };
    } catch (e) {
      throw this.mapError(e, 'put', key);
    }
  }

  putIfAbsent(key: string, body: Uint8Array): Promise<{ etag: string } | undefined> {
    return this.conditionalPut(key, body, { IfNoneMatch: '*' });
  }

  putIfMatch(key: string, body: Uint8Array, etag: string): Promise<{ etag: string } | undefined> {
    return this.conditionalPut(key, body, { IfMatch: etag });
  }

  async *list(prefix: string, opts: ListOptions = {}): AsyncIterable<ObjectInfo> {
    checkKeyPrefix(prefix);
    const root = this.prefix ? `${this.prefix}/` : '';
    const StartAfter = opts.startAfter !== undefined ? root + opts.startAfter : undefined;
    let ContinuationToken: string | undefined;
    do {
      let page;
      try {
        page = await this.client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: root + prefix || undefined,
            ContinuationToken,
            StartAfter: ContinuationToken ? undefined : StartAfter,
          }),
        );
      } catch (e) {
        throw this.mapError(e, 'list', prefix);
      }
      // S3 lists in UTF-8 byte order, which is the key order of every varve store.
      for (const o of page.Contents ?? []) {
        if (o.Key === undefined) continue;
        yield { key: o.Key.slice(root.length), size: o.Size ?? 0, lastModified: o.LastModified?.getTime() ?? 0 };
      }
      ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (ContinuationToken);
  }

  async delete(key: string): Promise<void> {
    const Key = this.s3Key(key);
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key }));
    } catch (e) {
      if (s3IsNoSuchKey(e)) return;
      throw this.mapError(e, 'delete', key);
    }
  }

  /** A multipart upload past one part (PutObject below it); a failure aborts it, leaving no object and no parts. */
  upload(key: string): ObjectUpload {
    const Key = this.s3Key(key);
    return new S3Upload({
      client: this.client,
      bucket: this.bucket,
      key: Key,
      where: `${this.uri}/${key}`,
      partSize: this.partSize,
      mapError: (e, op) => this.mapError(e, op, key),
    });
  }

  /**
   * DeleteObject with If-Match. S3 answers 409 ConditionalRequestConflict when a PUT or DELETE of
   * the key is in flight at the same time: the delete had no effect, and is sent again until S3
   * gives a definite answer. Should the conflicts outlast the retries, the other request wins as it
   * would with a 412, and nothing is deleted (never the version being written).
   */
  async deleteIfMatch(key: string, etag: string): Promise<boolean> {
    const Key = this.s3Key(key);
    try {
      await this.resendingConflicts(key, () =>
        this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key, IfMatch: etag })),
      );
      return true;
    } catch (e) {
      if (e instanceof ConditionalRequestConflictError) return false;
      // 412: rewritten since it was read; 404: gone (deleted by another, or by this call's first attempt).
      if (s3Status(e) === 412 || s3IsNoSuchKey(e) || s3Status(e) === 404) return false;
      throw this.mapError(e, 'deleteIfMatch', key);
    }
  }

  private async conditionalPut(
    key: string,
    body: Uint8Array,
    condition: { IfNoneMatch: '*' } | { IfMatch: string },
  ): Promise<{ etag: string } | undefined> {
    const Key = this.s3Key(key);
    const op = 'IfMatch' in condition ? 'putIfMatch' : 'putIfAbsent';
    try {
      const r = await this.resendingConflicts(key, () =>
        this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key, Body: body, ...condition })),
      );
      return { etag: this.etagOf(r.ETag, key) };
    } catch (e) {
      if (e instanceof ConditionalRequestConflictError) throw e;
      if (s3Status(e) === 412) return this.afterPreconditionFailed(key, body, e);
      if (op === 'putIfMatch' && s3IsNoSuchKey(e)) throw new ObjectNotFoundError(key, { cause: e });
      throw this.mapError(e, op, key);
    }
  }

  /**
   * Sends a conditional request, again while S3 answers 409 ConditionalRequestConflict: another
   * request on the key was in flight, this one had no effect, so sending it again as is is safe
   * (an If-Match then meets the current ETag: a 412 if the other request changed the object).
   * After `conflictRetries` resends, throws ConditionalRequestConflictError (retryable). 503
   * SlowDown and other throttling answers are retried with backoff by the SDK's own retry
   * strategy before they reach here (then mapped to StoreUnavailableError, retryable).
   */
  private async resendingConflicts<T>(key: string, send: () => Promise<T>): Promise<T> {
    const budget = new RetryBudget({
      what: `conditional request on ${this.uri}/${key}`,
      maxRetries: this.conflictRetries,
      minWaitMs: this.conflictBackoffMs,
      maxWaitMs: 2000,
    });
    for (;;) {
      try {
        return await send();
      } catch (e) {
        if (s3Status(e) !== 409) throw e;
        try {
          await budget.retry('409 ConditionalRequestConflict', e);
        } catch {
          throw new ConditionalRequestConflictError(key, { cause: e });
        }
      }
    }
  }

  /**
   * A 412 normally means the race was lost. But when the SDK itself resent the request (after a
   * timeout or 5xx), the first attempt may have been applied and the 412 be our own write: then the
   * stored bytes are ours, and reporting a loss would make a winning commit retry. This is exact
   * when bodies are unique per writer (a snapshot names its commit); two writers that put the same
   * bytes cannot be told apart, and both are told they won.
   */
  private async afterPreconditionFailed(
    key: string,
    body: Uint8Array,
    e: unknown,
  ): Promise<{ etag: string } | undefined> {
    if (s3Attempts(e) <= 1) return undefined;
    let current: StoredObject;
    try {
      current = await this.get(key);
    } catch (err) {
      if (err instanceof ObjectNotFoundError) return undefined; // deleted since: it was not ours to keep
      throw err;
    }
    return equalBytes(current.body, body) ? { etag: current.etag } : undefined;
  }

  private s3Key(key: string): string {
    checkObjectKey(key);
    return this.prefix ? `${this.prefix}/${key}` : key;
  }

  private etagOf(etag: string | undefined, key: string): string {
    if (etag === undefined) throw new StoreUnavailableError(`S3 returned no ETag for ${this.uri}/${key}; retry`);
    return etag;
  }

  /** Maps an SDK error of `op` on `key` to the taxonomy; errors of unknown meaning pass through. */
  private mapError(e: unknown, op: string, key: string): unknown {
    const where = `${this.uri}/${key}`;
    const what = `${s3ErrorName(e)}${s3Status(e) ? ` (HTTP ${s3Status(e)})` : ''}`;
    const setup = awsSetupProblem(e, 'S3');
    if (setup !== undefined) {
      // An endpoint nothing answers at may come back (a restart): retryable, like any network failure.
      const Type = (e as { code?: unknown }).code !== undefined ? StoreUnavailableError : InvalidArgumentError;
      return new Type(`S3 ${op} on ${where} failed: ${setup}`, { cause: e });
    }
    if (s3ErrorName(e) === 'NoSuchBucket') {
      return new InvalidArgumentError(
        `S3 bucket ${this.bucket} does not exist: create it or fix the store URI ${this.uri}`,
        {
          cause: e,
        },
      );
    }
    if (s3IsAccessDenied(e)) {
      return new InvalidArgumentError(
        `S3 ${op} on ${where} was refused: ${what}; check the AWS credentials and that the bucket policy allows ` +
          `s3:GetObject, s3:PutObject, s3:ListBucket and s3:DeleteObject (s3:AbortMultipartUpload where compaction writes)`,
        { cause: e },
      );
    }
    if (s3Status(e) === 409 && op === 'completeMultipartUpload') {
      // A conflicting request on the key while the upload completed: S3's answer is to start the
      // upload again (CreateMultipartUpload, every part), which only the writer of the bytes can
      // do. The upload is aborted; the writer retries the file on this retryable conflict.
      return new ConditionalRequestConflictError(key, { cause: e });
    }
    if (s3IsTransient(e)) {
      return new StoreUnavailableError(
        `S3 ${op} on ${where} failed: ${what}; S3 is unavailable or throttling, retry later`,
        {
          cause: e,
        },
      );
    }
    return e;
  }
}
