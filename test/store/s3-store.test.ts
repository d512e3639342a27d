import { randomUUID } from 'node:crypto';
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ConditionalRequestConflictError,
  InvalidArgumentError,
  InvalidKeyError,
  ObjectNotFoundError,
  StoreUnavailableError,
} from '../../lib/errors.js';
import { fromUtf8, listAll, utf8 } from '../../lib/store/object-store.js';
import { S3Store, defaultS3Client } from '../../lib/store/s3-store.js';
import { awsAvailable, freshBucket } from '../helpers/aws.js';
import { storeContract } from './store-contract.js';

describe.skipIf(!awsAvailable())('S3Store on moto', () => {
  let bucket: Promise<string> | undefined;
  // One bucket for the suite, a fresh prefix per test: every test still starts from an empty store.
  storeContract(
    'S3Store',
    async () => new S3Store({ bucket: await (bucket ??= freshBucket()), prefix: `t-${randomUUID()}/` }),
    // moto's conditional checks are not atomic (see ContractOptions): how many races slip through
    // grows with how busy the machine is, so the bound is the race's size, not a lucky count. Every
    // extra win is still counted and accounted for by the test (160 - extra wins).
    { conditionalRaceSlack: 16 },
  );

  it('works at the bucket root, without a prefix', async () => {
    const store = new S3Store({ bucket: await freshBucket() });

    await store.put('snapshot/snapshot-1', utf8('1'));

    expect(store.uri).toMatch(/^s3:\/\/varve-test-[0-9a-f]{8}$/);
    expect((await listAll(store, '')).map((o) => o.key)).toEqual(['snapshot/snapshot-1']);
    expect(fromUtf8((await store.get('snapshot/snapshot-1')).body)).toBe('1');
  });

  it('names a missing bucket instead of reporting a missing object', async () => {
    const store = new S3Store({ bucket: `varve-missing-${randomUUID().slice(0, 8)}` });

    await expect(store.get('k')).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});

/** An error shaped like the SDK's: a status in `$metadata`, S3's error code in `name`. */
function sdkError(status: number | undefined, name: string, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(`${name} from fake S3`), {
    name,
    $metadata: status === undefined ? {} : { httpStatusCode: status, attempts: 1 },
    ...extra,
  });
}

type Answer = (cmd: unknown, n: number) => unknown;

/** A client whose `send` records each command and answers with `answer` (throwing what it throws). */
function fakeS3(answer: Answer) {
  const sent: unknown[] = [];
  const client = {
    async send(cmd: unknown) {
      sent.push(cmd);
      return answer(cmd, sent.length);
    },
  };
  return { client: client as unknown as S3Client, sent };
}

function storeWith(answer: Answer, prefix = 'wh') {
  const { client, sent } = fakeS3(answer);
  return { store: new S3Store({ bucket: 'b', prefix, client, conflictBackoffMs: 1 }), sent };
}

function inputOf(cmd: unknown): Record<string, unknown> {
  return (cmd as { input: Record<string, unknown> }).input;
}

const body = () => ({ transformToByteArray: async () => utf8('payload') });

describe('S3Store error mapping (fake client)', () => {
  it('maps 412 on create-only to a lost race, sending If-None-Match: *', async () => {
    const { store, sent } = storeWith(() => {
      throw sdkError(412, 'PreconditionFailed');
    });

    expect(await store.putIfAbsent('snap/1', utf8('x'))).toBeUndefined();

    expect(sent).toHaveLength(1);
    expect(sent[0]).toBeInstanceOf(PutObjectCommand);
    expect(inputOf(sent[0])).toMatchObject({ Bucket: 'b', Key: 'wh/snap/1', IfNoneMatch: '*' });
  });

  it('retries 409 and succeeds when the conflict clears', async () => {
    const { store, sent } = storeWith((_cmd, n) => {
      if (n <= 2) throw sdkError(409, 'ConditionalRequestConflict');
      return { ETag: '"e3"' };
    });

    expect(await store.putIfMatch('ptr', utf8('x'), '"e1"')).toEqual({ etag: '"e3"' });

    expect(sent).toHaveLength(3);
    expect(inputOf(sent[2])).toMatchObject({ Key: 'wh/ptr', IfMatch: '"e1"' });
  });

  it('gives up on 409 after 3 retries with ConditionalRequestConflictError', async () => {
    const { store, sent } = storeWith(() => {
      throw sdkError(409, 'ConditionalRequestConflict');
    });

    const attempt = store.putIfAbsent('snap/1', utf8('x'));

    await expect(attempt).rejects.toBeInstanceOf(ConditionalRequestConflictError);
    await expect(attempt).rejects.toMatchObject({
      key: 'snap/1',
      retryable: true,
      cause: { name: 'ConditionalRequestConflict' },
    });
    expect(sent).toHaveLength(4);
  });

  it('maps 404 on If-Match and on get to ObjectNotFoundError, and on head to undefined', async () => {
    const { store } = storeWith((cmd) => {
      throw cmd instanceof HeadObjectCommand ? sdkError(404, 'NotFound') : sdkError(404, 'NoSuchKey');
    });

    await expect(store.putIfMatch('ptr', utf8('x'), '"e"')).rejects.toBeInstanceOf(ObjectNotFoundError);
    await expect(store.get('k')).rejects.toMatchObject({ name: 'ObjectNotFoundError', key: 'k' });
    await expect(store.getRange('k', 0, 8)).rejects.toBeInstanceOf(ObjectNotFoundError);
    expect(await store.head('k')).toBeUndefined();
    await store.delete('k');
  });

  it('maps 5xx, throttling and network failures to a retryable StoreUnavailableError with the cause', async () => {
    const failures = [
      sdkError(503, 'ServiceUnavailable'),
      sdkError(500, 'InternalError'),
      sdkError(503, 'SlowDown'),
      sdkError(400, 'RequestTimeout'),
      sdkError(undefined, 'TimeoutError'),
      Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
    ];
    for (const failure of failures) {
      const { store } = storeWith(() => {
        throw failure;
      });
      for (const call of [
        store.get('k'),
        store.put('k', utf8('x')),
        store.putIfAbsent('k', utf8('x')),
        listAll(store, ''),
      ]) {
        const error = await call.then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error, failure.name).toBeInstanceOf(StoreUnavailableError);
        expect(error).toMatchObject({ retryable: true, cause: failure });
      }
    }
  });

  it('explains a refused request and a missing bucket; passes other errors through', async () => {
    const denied = storeWith(() => {
      throw sdkError(403, 'AccessDenied');
    }).store;
    const noBucket = storeWith(() => {
      throw sdkError(404, 'NoSuchBucket');
    }).store;
    const odd = sdkError(400, 'InvalidArgument');
    const other = storeWith(() => {
      throw odd;
    }).store;

    await expect(denied.put('k', utf8('x'))).rejects.toThrow(/credentials/);
    await expect(denied.put('k', utf8('x'))).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(noBucket.get('k')).rejects.toThrow(/bucket b does not exist/);
    await expect(noBucket.putIfMatch('k', utf8('x'), '"e"')).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(other.get('k')).rejects.toBe(odd);
  });

  it('treats a 412 after an SDK-level resend as its own write when the stored bytes are its own', async () => {
    const resent = sdkError(412, 'PreconditionFailed', { $metadata: { httpStatusCode: 412, attempts: 2 } });
    const stored = (bytes: string) =>
      storeWith((cmd) => {
        if (cmd instanceof PutObjectCommand) throw resent;
        return { Body: { transformToByteArray: async () => utf8(bytes) }, ETag: '"stored"' };
      }).store;

    expect(await stored('mine').putIfAbsent('snap/1', utf8('mine'))).toEqual({ etag: '"stored"' });
    expect(await stored('theirs').putIfAbsent('snap/1', utf8('mine'))).toBeUndefined();
  });

  it('sends inclusive HTTP ranges and clamps a range past the end', async () => {
    const { store, sent } = storeWith((_cmd, n) => {
      if (n === 2) throw sdkError(416, 'InvalidRange');
      return { Body: body() };
    });

    expect(fromUtf8(await store.getRange('f.parquet', 5, 10))).toBe('payload');
    expect((await store.getRange('f.parquet', 100, 108)).length).toBe(0);

    expect(sent[0]).toBeInstanceOf(GetObjectCommand);
    expect(inputOf(sent[0])).toMatchObject({ Key: 'wh/f.parquet', Range: 'bytes=5-9' });
  });

  it('pages through ListObjectsV2 with the continuation token and strips the prefix', async () => {
    const pages = [
      {
        Contents: [{ Key: 'wh/s/a', Size: 1, LastModified: new Date(1000) }],
        IsTruncated: true,
        NextContinuationToken: 't1',
      },
      {
        Contents: [{ Key: 'wh/s/b', Size: 2, LastModified: new Date(2000) }],
        IsTruncated: true,
        NextContinuationToken: 't2',
      },
      { Contents: [{ Key: 'wh/s/c', Size: 3, LastModified: new Date(3000) }], IsTruncated: false },
    ];
    const { store, sent } = storeWith((_cmd, n) => pages[n - 1]);

    const listed = await listAll(store, 's/');

    expect(listed).toEqual([
      { key: 's/a', size: 1, lastModified: 1000 },
      { key: 's/b', size: 2, lastModified: 2000 },
      { key: 's/c', size: 3, lastModified: 3000 },
    ]);
    expect(sent.every((c) => c instanceof ListObjectsV2Command)).toBe(true);
    expect(sent.map((c) => inputOf(c).ContinuationToken)).toEqual([undefined, 't1', 't2']);
    expect(sent.map((c) => inputOf(c).Prefix)).toEqual(['wh/s/', 'wh/s/', 'wh/s/']);
  });

  it('joins keys under the prefix whatever its slashes', async () => {
    const ok = () => ({ ETag: '"e"' });
    const slashed = storeWith(ok, '/p/q/');
    const bare = storeWith(ok, '');

    await slashed.store.put('k', utf8('x'));
    await bare.store.put('k', utf8('x'));
    await listAll(bare.store, '');

    expect(slashed.store.uri).toBe('s3://b/p/q');
    expect(inputOf(slashed.sent[0]).Key).toBe('p/q/k');
    expect(bare.store.uri).toBe('s3://b');
    expect(inputOf(bare.sent[0]).Key).toBe('k');
    expect(inputOf(bare.sent[1]).Prefix).toBeUndefined();
  });

  it('rejects bad keys, prefixes and bucket names before calling S3', async () => {
    const { store, sent } = storeWith(() => ({}));

    await expect(store.put('../escape', utf8('x'))).rejects.toBeInstanceOf(InvalidKeyError);
    await expect(store.putIfAbsent('a//b', utf8('x'))).rejects.toBeInstanceOf(InvalidKeyError);

    expect(sent).toEqual([]);
    expect(() => new S3Store({ bucket: 'b', prefix: 'a/../b', client: fakeS3(() => ({})).client })).toThrow(
      InvalidKeyError,
    );
    expect(() => new S3Store({ bucket: 'b/c' })).toThrow(InvalidArgumentError);
    expect(() => new S3Store({ bucket: '' })).toThrow(InvalidArgumentError);
  });
});

describe('defaultS3Client', () => {
  const saved = { url: process.env.AWS_ENDPOINT_URL, s3: process.env.AWS_ENDPOINT_URL_S3 };
  function setEnv(name: 'AWS_ENDPOINT_URL' | 'AWS_ENDPOINT_URL_S3', value: string | undefined) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  afterEach(() => {
    setEnv('AWS_ENDPOINT_URL', saved.url);
    setEnv('AWS_ENDPOINT_URL_S3', saved.s3);
  });

  it('forces path-style URLs whenever an endpoint override is set, and only then', () => {
    setEnv('AWS_ENDPOINT_URL', 'http://localhost:4566');
    setEnv('AWS_ENDPOINT_URL_S3', undefined);
    expect(defaultS3Client().config.forcePathStyle).toBe(true);

    setEnv('AWS_ENDPOINT_URL', undefined);
    setEnv('AWS_ENDPOINT_URL_S3', 'http://localhost.localstack.cloud:4566');
    expect(defaultS3Client().config.forcePathStyle).toBe(true);

    setEnv('AWS_ENDPOINT_URL_S3', undefined);
    expect(defaultS3Client().config.forcePathStyle).toBe(false);
    expect(new S3Store({ bucket: 'b' }).client.config.forcePathStyle).toBe(false);
  });
});
