/**
 * Every documented S3 answer to varve's conditional requests, injected as real HTTP responses
 * (SDK middleware below the deserializer, so the SDK parses them and its retry strategy sees them
 * as it would on AWS), everything else passed through to moto: 409 ConditionalRequestConflict on
 * a conditional PUT, a conditional DELETE and CompleteMultipartUpload, and 503 SlowDown.
 */
import { Readable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { ConditionalRequestConflictError, StoreUnavailableError } from '../../lib/errors.js';
import { fromUtf8, utf8 } from '../../lib/store/object-store.js';
import { S3Store } from '../../lib/store/s3-store.js';
import { awsAvailable, freshBucket } from '../helpers/aws.js';

/** An S3 error answer: status and S3 error code. */
interface Answer {
  status: number;
  code: string;
}

const CONFLICT: Answer = { status: 409, code: 'ConditionalRequestConflict' };
const SLOW_DOWN: Answer = { status: 503, code: 'SlowDown' };

/**
 * An S3 client on moto that answers the next requests of `command` with `answers` (one each, in
 * order; `repeat` keeps answering the last one), records every request it sends and the metadata
 * of every call's outcome.
 */
function injecting(command: string, answers: Answer[], repeat = false) {
  const client = new S3Client({ forcePathStyle: true });
  const sent: string[] = [];
  const outcomes: { attempts?: number; totalRetryDelay?: number }[] = [];
  let next = 0;
  client.middlewareStack.add(
    (handler, context) => async (args) => {
      sent.push(context.commandName ?? '?');
      if (context.commandName !== command || (next >= answers.length && !repeat)) return handler(args);
      const a = answers[Math.min(next++, answers.length - 1)];
      const xml = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${a.code}</Code><Message>injected ${a.code}</Message><RequestId>varve-test</RequestId></Error>`;
      // An HTTP response as the SDK's handler returns one (HttpResponse is duck-typed).
      return {
        response: {
          statusCode: a.status,
          headers: { 'content-type': 'application/xml' },
          body: Readable.from([Buffer.from(xml)]),
        },
      };
    },
    { step: 'deserialize', priority: 'low', name: 'varveInjectAnswer' },
  );
  client.middlewareStack.add(
    (handler) => async (args) => {
      try {
        const out = await handler(args);
        outcomes.push((out.output as { $metadata: { attempts?: number; totalRetryDelay?: number } }).$metadata);
        return out;
      } catch (e) {
        outcomes.push((e as { $metadata?: { attempts?: number; totalRetryDelay?: number } }).$metadata ?? {});
        throw e;
      }
    },
    { step: 'initialize', name: 'varveRecordOutcome' },
  );
  const sends = () => sent.filter((c) => c === command).length;
  return { client, sent, sends, outcomes };
}

async function storeOn(client: S3Client): Promise<S3Store> {
  return new S3Store({
    bucket: await freshBucket(),
    prefix: `a-${randomUUID().slice(0, 8)}`,
    client,
    conflictBackoffMs: 1,
  });
}

describe.skipIf(!awsAvailable())(
  'S3 answers to conditional requests (injected into a real client, moto behind)',
  () => {
    it('resends a create-only PUT on 409 ConditionalRequestConflict until S3 answers', async () => {
      // Prepare
      const s3 = injecting('PutObjectCommand', [CONFLICT, CONFLICT]);
      const store = await storeOn(s3.client);
      // Act
      const put = await store.putIfAbsent('snapshot/snapshot-1', utf8('one'));
      // Assess: two conflicts, then moto's answer; the object is there once.
      expect(put?.etag).toBeTruthy();
      expect(s3.sends()).toBe(3);
      expect(fromUtf8((await store.get('snapshot/snapshot-1')).body)).toBe('one');
      // The same PUT once more is a lost race (412), not a conflict.
      expect(await store.putIfAbsent('snapshot/snapshot-1', utf8('two'))).toBeUndefined();
    });

    it('resends a compare-and-swap PUT on 409 and reports the lost race the resend finds', async () => {
      const s3 = injecting('PutObjectCommand', []);
      const store = await storeOn(s3.client);
      const first = (await store.putIfAbsent('ptr', utf8('a')))!;
      await store.put('ptr', utf8('b')); // the other writer's PUT, which the 409 stood for
      const conflicted = injecting('PutObjectCommand', [CONFLICT]);
      const cas = new S3Store({
        bucket: store.bucket,
        prefix: store.prefix,
        client: conflicted.client,
        conflictBackoffMs: 1,
      });
      // Act / Assess: the resend meets the new ETag: 412, the swap is lost, nothing overwritten.
      expect(await cas.putIfMatch('ptr', utf8('c'), first.etag)).toBeUndefined();
      expect(conflicted.sends()).toBe(2);
      expect(fromUtf8((await store.get('ptr')).body)).toBe('b');
    });

    it('gives up a conditional PUT after its conflict retries with a retryable ConditionalRequestConflictError', async () => {
      const s3 = injecting('PutObjectCommand', [CONFLICT], true);
      const store = await storeOn(s3.client);
      await expect(store.putIfAbsent('snapshot/snapshot-1', utf8('x'))).rejects.toMatchObject({
        name: 'ConditionalRequestConflictError',
        retryable: true,
      });
      expect(s3.sends()).toBe(4);
    });

    it('resends a conditional DELETE (If-Match) on 409 and deletes once S3 answers', async () => {
      // Prepare: the object, then a delete that meets two conflicts (an expiry racing a reader's write).
      const plain = injecting('DeleteObjectCommand', []);
      const setup = await storeOn(plain.client);
      const { etag } = await setup.put('consumer/consumer-a', utf8('progress'));
      const s3 = injecting('DeleteObjectCommand', [CONFLICT, CONFLICT]);
      const store = new S3Store({
        bucket: setup.bucket,
        prefix: setup.prefix,
        client: s3.client,
        conflictBackoffMs: 1,
      });
      // Act / Assess
      expect(await store.deleteIfMatch('consumer/consumer-a', etag)).toBe(true);
      expect(s3.sends()).toBe(3);
      expect(await store.head('consumer/consumer-a')).toBeUndefined();
    });

    it('keeps the object when conflicts on a conditional DELETE outlast the retries: the other request wins, no error', async () => {
      const plain = injecting('DeleteObjectCommand', []);
      const setup = await storeOn(plain.client);
      const { etag } = await setup.put('consumer/consumer-a', utf8('progress'));
      const s3 = injecting('DeleteObjectCommand', [CONFLICT], true);
      const store = new S3Store({
        bucket: setup.bucket,
        prefix: setup.prefix,
        client: s3.client,
        conflictBackoffMs: 1,
      });
      // A 409 used to escape as a raw, non-retryable error and abort the whole expiry run.
      expect(await store.deleteIfMatch('consumer/consumer-a', etag)).toBe(false);
      expect(s3.sends()).toBe(4);
      expect(fromUtf8((await store.get('consumer/consumer-a')).body)).toBe('progress');
    });

    it('aborts a multipart upload whose CompleteMultipartUpload meets 409, with a retryable conflict for its writer', async () => {
      // Prepare: an upload past one part (5 MiB parts), so it is multipart.
      const s3 = injecting('CompleteMultipartUploadCommand', [CONFLICT]);
      const store = new S3Store({
        bucket: await freshBucket(),
        prefix: 'mpu',
        client: s3.client,
        multipartPartSize: 5 * 1024 * 1024,
      });
      const upload = store.upload('data/big.parquet');
      await upload.write(new Uint8Array(6 * 1024 * 1024).fill(7));
      // Act
      const error = await upload.complete().then(
        () => undefined,
        (e: unknown) => e,
      );
      // Assess: the conflict is the writer's to retry (S3's answer is a new upload of every part);
      // no object, and no parts left billed.
      expect(error).toBeInstanceOf(ConditionalRequestConflictError);
      expect(error).toMatchObject({ retryable: true, key: 'data/big.parquet' });
      expect(await store.head('data/big.parquet')).toBeUndefined();
      const pending = await s3.client.send(new ListMultipartUploadsCommand({ Bucket: store.bucket }));
      expect(pending.Uploads ?? []).toEqual([]);
      // The writer's retry, a fresh upload, lands.
      const again = store.upload('data/big.parquet');
      await again.write(new Uint8Array(6 * 1024 * 1024).fill(7));
      expect((await again.complete()).size).toBe(6 * 1024 * 1024);
    });

    it('backs off on 503 SlowDown (the SDK retry strategy) and succeeds when S3 recovers', async () => {
      const s3 = injecting('PutObjectCommand', [SLOW_DOWN, SLOW_DOWN]);
      const store = await storeOn(s3.client);
      expect(await store.putIfAbsent('snapshot/snapshot-1', utf8('x'))).toBeDefined();
      expect(s3.sends()).toBe(3);
      const put = s3.outcomes.at(-1)!;
      expect(put.attempts).toBe(3);
      // Waited between the attempts (the SDK's throttling backoff), never resent at once.
      expect(put.totalRetryDelay).toBeGreaterThan(0);
    });

    it('reports S3 still slowing down after the SDK retries as a retryable StoreUnavailableError', async () => {
      const s3 = injecting('GetObjectCommand', [SLOW_DOWN], true);
      const store = await storeOn(s3.client);
      await store.put('k', utf8('x'));
      const error = await store.get('k').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(error).toMatchObject({
        retryable: true,
        message: expect.stringMatching(/SlowDown \(HTTP 503\).*throttling/),
      });
      expect(s3.outcomes.at(-1)?.totalRetryDelay).toBeGreaterThan(0);
    });
  },
);
