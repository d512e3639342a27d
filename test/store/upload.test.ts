/**
 * Part-at-a-time uploads (ObjectStore.upload): S3 multipart on moto (parts of at least 5 MiB,
 * a failure injected mid-upload leaves no object and no open upload), the local folder's temp file
 * and rename, and the fallback for stores without one.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { ListMultipartUploadsCommand, UploadPartCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../lib/errors.js';
import { LocalStore } from '../../lib/store/local-store.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { listAll, openUpload, type ObjectStore } from '../../lib/store/object-store.js';
import { S3Store, defaultS3Client } from '../../lib/store/s3-store.js';
import { contentEtag } from '../../lib/store/etag.js';
import { awsAvailable, freshBucket } from '../helpers/aws.js';

const MiB = 1024 * 1024;

/** `total` random bytes in pieces of 1..`maxPiece` bytes. */
function pieces(total: number, maxPiece: number): Uint8Array[] {
  const all = randomBytes(total);
  const out: Uint8Array[] = [];
  for (let at = 0; at < total; ) {
    const n = Math.min(total - at, 1 + Math.floor(Math.random() * maxPiece));
    out.push(new Uint8Array(all.buffer, all.byteOffset + at, n));
    at += n;
  }
  return out;
}

function joined(parts: Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(parts));
}

/** Counts the client's requests by command name, failing the `failAt`-th UploadPart if set. */
function instrument(client: S3Client, failAt?: number): Map<string, number> {
  const counts = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? '?';
      counts.set(name, (counts.get(name) ?? 0) + 1);
      if (failAt !== undefined && name === UploadPartCommand.name && counts.get(name) === failAt) {
        throw Object.assign(new Error('injected: connection reset during UploadPart'), {
          name: 'InjectedFault',
          $metadata: {},
        });
      }
      return next(args);
    },
    { step: 'initialize', name: `count-${randomUUID()}` },
  );
  return counts;
}

describe.skipIf(!awsAvailable())('S3Store.upload on moto', () => {
  it('streams an object larger than a part as a multipart upload, and a small one as one PUT', async () => {
    // Prepare
    const client = defaultS3Client();
    const counts = instrument(client);
    const store = new S3Store({ bucket: await freshBucket(), prefix: 'u', client, multipartPartSize: 5 * MiB });
    const big = pieces(12 * MiB + 12345, 700_000);

    // Act
    const up = store.upload('bucket-0/data-big.parquet');
    for (const p of big) await up.write(p);
    const done = await up.complete();
    const small = store.upload('bucket-0/data-small.parquet');
    await small.write(new Uint8Array([1, 2, 3]));
    await small.complete();

    // Assess: 3 parts (5 + 5 + the rest), the bytes exact, one plain PUT for the small object.
    expect(counts.get('UploadPartCommand')).toBe(3);
    expect(counts.get('CompleteMultipartUploadCommand')).toBe(1);
    expect(counts.get('PutObjectCommand')).toBe(1);
    expect(done.size).toBe(12 * MiB + 12345);
    expect(Buffer.compare((await store.get('bucket-0/data-big.parquet')).body, joined(big))).toBe(0);
    expect([...(await store.get('bucket-0/data-small.parquet')).body]).toEqual([1, 2, 3]);
  });

  it('a failure mid-upload leaves no object and no open multipart upload', async () => {
    // Prepare: the second UploadPart fails (after the first part went up).
    const bucket = await freshBucket();
    const client = defaultS3Client();
    const counts = instrument(client, 2);
    const store = new S3Store({ bucket, client, multipartPartSize: 5 * MiB });
    const up = store.upload('bucket-0/data-failed.parquet');

    // Act
    let error: unknown;
    try {
      for (const p of pieces(16 * MiB, 1 * MiB)) await up.write(p);
      await up.complete();
    } catch (e) {
      error = e;
    }

    // Assess
    expect(String(error)).toMatch(/injected/);
    expect(counts.get('AbortMultipartUploadCommand')).toBe(1);
    expect(await listAll(store, '')).toEqual([]);
    const open = await defaultS3Client().send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    expect(open.Uploads ?? []).toEqual([]);
    await expect(up.write(new Uint8Array(1))).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('abort by the caller removes the parts sent so far', async () => {
    const bucket = await freshBucket();
    const store = new S3Store({ bucket, multipartPartSize: 5 * MiB });
    const up = store.upload('bucket-0/data-given-up.parquet');
    for (const p of pieces(11 * MiB, 2 * MiB)) await up.write(p);

    await up.abort();
    await up.abort(); // twice is harmless

    expect(await listAll(store, '')).toEqual([]);
    const open = await defaultS3Client().send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    expect(open.Uploads ?? []).toEqual([]);
  });

  it('refuses a part size under S3 minimum of 5 MiB', async () => {
    expect(() => new S3Store({ bucket: 'b', multipartPartSize: 5 * MiB - 1 })).toThrow(InvalidArgumentError);
  });
});

describe('LocalStore.upload', () => {
  let dir: string;
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('publishes the object only on complete, with the etag of its bytes, and leaves no temp file', async () => {
    dir = await mkdtemp(join(os.tmpdir(), 'varve-upload-'));
    const store = new LocalStore(dir);
    const parts = pieces(3 * MiB + 7, 300_000);

    const up = store.upload('t/bucket-0/data-1.parquet');
    for (const p of parts.slice(0, 3)) await up.write(p);
    const before = await store.head('t/bucket-0/data-1.parquet');
    for (const p of parts.slice(3)) await up.write(p);
    const done = await up.complete();

    expect(before).toBeUndefined();
    const got = await store.get('t/bucket-0/data-1.parquet');
    expect(Buffer.compare(got.body, joined(parts))).toBe(0);
    expect(done).toEqual({ etag: got.etag, size: 3 * MiB + 7 });
    expect(done.etag).toBe(contentEtag(joined(parts)));
    expect(await readdir(join(dir, 't', 'bucket-0'))).toEqual(['data-1.parquet']);
  });

  it('abort leaves neither the object nor a temp file', async () => {
    dir = await mkdtemp(join(os.tmpdir(), 'varve-upload-'));
    const store = new LocalStore(dir);
    const up = store.upload('t/bucket-0/data-2.parquet');
    await up.write(new Uint8Array(1000));

    await up.abort();

    expect(await store.head('t/bucket-0/data-2.parquet')).toBeUndefined();
    expect(await readdir(join(dir, 't', 'bucket-0'))).toEqual([]);
    await expect(up.complete()).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});

describe('openUpload on a store without upload', () => {
  it('collects the parts into one put, so the store sees one whole object (and its faults)', async () => {
    const store: ObjectStore = new MemoryStore();
    expect(store.upload).toBeUndefined();
    const parts = pieces(10_000, 999);

    const up = openUpload(store, 'k');
    for (const p of parts) await up.write(p);
    expect(await store.head('k')).toBeUndefined();
    const done = await up.complete();

    expect(Buffer.compare((await store.get('k')).body, joined(parts))).toBe(0);
    expect(done.size).toBe(10_000);
  });
});
