/**
 * A part-at-a-time object on S3: bytes collect until a part is full, then go out as an UploadPart
 * of a multipart upload (created at the first full part), so memory holds one part, not the
 * object. An object smaller than one part is a single PutObject. Any failure aborts the upload, so
 * no object appears and no parts are left billed; `abort` does the same for a caller that gives up.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
  type S3Client,
} from '@aws-sdk/client-s3';
import { InvalidArgumentError, StoreUnavailableError } from '../errors.js';
import { concatBytes, type ObjectUpload } from './object-store.js';

/** S3's smallest part (every part but the last must be at least this). */
const S3_MIN_PART_SIZE = 5 * 1024 * 1024;
/** Default part size of a varve upload. */
export const S3_DEFAULT_PART_SIZE = 8 * 1024 * 1024;

export interface S3UploadTarget {
  client: S3Client;
  bucket: string;
  /** The full S3 key. */
  key: string;
  /** For messages: `s3://bucket/prefix/key`. */
  where: string;
  partSize: number;
  /** The store's mapping of SDK errors to varve's taxonomy. */
  mapError(e: unknown, op: string): unknown;
}

/** Checks a configured part size: S3 refuses parts under 5 MiB (the last part excepted). */
export function checkPartSize(partSize: number): number {
  if (!Number.isInteger(partSize) || partSize < S3_MIN_PART_SIZE) {
    throw new InvalidArgumentError(
      `S3 multipart part size must be an integer of at least ${S3_MIN_PART_SIZE} bytes (5 MiB), got ${partSize}`,
    );
  }
  return partSize;
}

export class S3Upload implements ObjectUpload {
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  private size = 0;
  private uploadId: string | undefined;
  private readonly parts: CompletedPart[] = [];
  private state: 'open' | 'completed' | 'aborted' = 'open';

  constructor(private readonly t: S3UploadTarget) {}

  async write(bytes: Uint8Array): Promise<void> {
    this.checkOpen();
    if (bytes.byteLength === 0) return;
    this.pending.push(bytes);
    this.pendingBytes += bytes.byteLength;
    this.size += bytes.byteLength;
    if (this.pendingBytes >= this.t.partSize) await this.failSafe(() => this.sendPart());
  }

  async complete(): Promise<{ etag: string; size: number }> {
    this.checkOpen();
    return this.failSafe(async () => {
      if (this.uploadId === undefined) {
        // Smaller than one part: one PutObject, no multipart upload at all.
        const body = this.take();
        let r;
        try {
          r = await this.t.client.send(new PutObjectCommand({ Bucket: this.t.bucket, Key: this.t.key, Body: body }));
        } catch (e) {
          throw this.t.mapError(e, 'put');
        }
        this.state = 'completed';
        return { etag: this.etag(r.ETag), size: this.size };
      }
      if (this.pendingBytes > 0) await this.sendPart();
      let r;
      try {
        r = await this.t.client.send(
          new CompleteMultipartUploadCommand({
            Bucket: this.t.bucket,
            Key: this.t.key,
            UploadId: this.uploadId,
            MultipartUpload: { Parts: this.parts },
          }),
        );
      } catch (e) {
        throw this.t.mapError(e, 'completeMultipartUpload');
      }
      this.state = 'completed';
      return { etag: this.etag(r.ETag), size: this.size };
    });
  }

  async abort(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'aborted';
    this.pending = [];
    this.pendingBytes = 0;
    const UploadId = this.uploadId;
    if (UploadId === undefined) return;
    try {
      await this.t.client.send(new AbortMultipartUploadCommand({ Bucket: this.t.bucket, Key: this.t.key, UploadId }));
    } catch (e) {
      throw this.t.mapError(e, 'abortMultipartUpload');
    }
  }

  /** Runs a step; on failure aborts the upload (best effort: the step's error is what the caller sees). */
  private async failSafe<T>(step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (e) {
      await this.abort().catch(() => undefined);
      throw e;
    }
  }

  private async sendPart(): Promise<void> {
    if (this.uploadId === undefined) {
      let r;
      try {
        r = await this.t.client.send(new CreateMultipartUploadCommand({ Bucket: this.t.bucket, Key: this.t.key }));
      } catch (e) {
        throw this.t.mapError(e, 'createMultipartUpload');
      }
      if (!r.UploadId) throw new StoreUnavailableError(`S3 returned no UploadId for ${this.t.where}; retry`);
      this.uploadId = r.UploadId;
    }
    const PartNumber = this.parts.length + 1;
    const Body = this.take();
    let r;
    try {
      r = await this.t.client.send(
        new UploadPartCommand({ Bucket: this.t.bucket, Key: this.t.key, UploadId: this.uploadId, PartNumber, Body }),
      );
    } catch (e) {
      throw this.t.mapError(e, 'uploadPart');
    }
    this.parts.push({ PartNumber, ETag: this.etag(r.ETag) });
  }

  private take(): Uint8Array {
    const body = concatBytes(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    return body;
  }

  private etag(etag: string | undefined): string {
    if (etag === undefined) throw new StoreUnavailableError(`S3 returned no ETag for ${this.t.where}; retry`);
    return etag;
  }

  private checkOpen(): void {
    if (this.state !== 'open')
      throw new InvalidArgumentError(`the upload of ${this.t.where} is ${this.state}; start a new one`);
  }
}
