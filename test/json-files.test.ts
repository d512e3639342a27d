/**
 * Every JSON file varve saves is read through lib/json.ts against a schema of its shape: for each
 * kind, what varve writes (older versions included) reads back, and a file holding `null`, `[]`,
 * an object of the wrong shape or no JSON at all is a CorruptMetadataError naming the file by its
 * full location.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CorruptMetadataError } from '../lib/errors.js';
import { readIdentifierIndex, batchIdentifiersOf } from '../lib/snapshot/commit-identifier.js';
import { readConsumer, readTombstone } from '../lib/snapshot/consumer.js';
import type { Snapshot } from '../lib/snapshot/snapshot.js';
import { objectLocation } from '../lib/store/json-file.js';
import { MemoryStore } from '../lib/store/memory-store.js';
import { utf8, type ObjectStore } from '../lib/store/object-store.js';
import { readLease } from '../lib/stream/lease.js';
import { readBucketProgress, readBucketProgressEntry } from '../lib/stream/progress.js';
import { readSplitFailures } from '../lib/stream/split-failures.js';
import { readSplitFence } from '../lib/stream/split-fence.js';

const T = 'db.db/t';

/** One kind of saved JSON file: where it is, bodies varve writes (current and older), and its reader. */
interface FileKind {
  kind: string;
  key: string;
  good: Record<string, unknown>[];
  read: (store: ObjectStore) => Promise<unknown>;
}

const KINDS: FileKind[] = [
  {
    kind: 'consumer',
    key: `${T}/consumer/consumer-c1`,
    good: [
      { nextSnapshot: 1 }, // the first version had no lastUpdated: the object's time stands in
      {
        nextSnapshot: 4,
        lastUpdated: 1_700_000_000_000.25,
        plannedSnapshot: 5,
        buckets: { 'p=1/bucket-0': { nextSnapshot: 4, lastPlanned: 5 } },
        run: 'r',
        fullSnapshot: 2,
        splitRefs: [3],
        tableUuid: 'u',
        gaps: [{ from: 1, to: 2, at: 1, reason: 'snapshot-expired' }],
        fromANewerVarve: true,
      },
    ],
    read: (s) => readConsumer(s, T, 'c1'),
  },
  {
    kind: 'consumer tombstone',
    key: `${T}/consumer/consumer-c1@expired`,
    good: [
      { id: 'c1', nextSnapshot: 3, lastUpdated: 1, expiredAt: 2, reason: 'idle' },
      { id: 'c1', nextSnapshot: 3, lastUpdated: 1, expiredAt: 2, reason: 'idle', delivered: { 'bucket-0': 4 }, fullSnapshot: 1, leaseToken: 7, run: 'r' },
    ],
    read: (s) => readTombstone(s, T, 'c1'),
  },
  {
    kind: 'consumer lease',
    key: `${T}/consumer/consumer-c1@lease`,
    good: [
      { holder: { host: 'h', pid: 1, readerId: 'r' }, token: 1, expiresAt: 2, acquiredAt: 1 },
      { holder: { host: 'h', pid: 1, readerId: 'r' }, token: 1, expiresAt: 2, acquiredAt: 1, tableUuid: 'u' },
    ],
    read: (s) => readLease(s, T, 'c1'),
  },
  {
    kind: 'bucket progress',
    key: `${T}/consumer/consumer-c1@progress/bucket-0`,
    good: [
      { run: 'r', snapshot: 3, updated: 1 },
      { run: 'r', snapshot: 3, updated: 1, token: 2, tableUuid: 'u', splitFence: 4 },
    ],
    read: (s) => readBucketProgress(s, T, 'c1', '', 0),
  },
  {
    kind: 'bucket progress (with etag)',
    key: `${T}/consumer/consumer-c1@progress/p=1/bucket-2`,
    good: [{ run: 'r', snapshot: 3, updated: 1 }],
    read: (s) => readBucketProgressEntry(s, T, 'c1', 'p=1', 2),
  },
  {
    kind: 'split fence',
    key: `${T}/consumer/consumer-c1@fence/bucket-0`,
    good: [{ token: 1, holder: 'proc/inv', expiresAt: 0, acquiredAt: 1 }],
    read: (s) => readSplitFence(s, `${T}/consumer/consumer-c1@fence/bucket-0`),
  },
  {
    kind: 'split failures',
    key: `${T}/consumer/consumer-c1@failures/bucket-0`,
    good: [
      { run: 'r', snapshot: 3, failures: 1, lastError: 'boom', updated: 1 },
      { run: 'r', snapshot: 3, failures: 1, lastError: 'boom', updated: 1, deadLettered: true, attempt: 2 },
    ],
    read: (s) => readSplitFailures(s, `${T}/consumer/consumer-c1@failures/bucket-0`),
  },
  {
    kind: 'commit identifier index',
    // identifierIndexKey(T, 'batch-1')
    key: `${T}/commit/identifier-${sha256('batch-1')}`,
    good: [
      { identifier: 'batch-1', holder: 'c', attempt: 3, updated: 1 },
      { identifier: 'batch-1', holder: 'c', attempt: 3, committed: 3, updated: 1, expiryMarks: true },
    ],
    read: (s) => readIdentifierIndex(s, T, 'batch-1'),
  },
];

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Bodies no varve writes for any kind. */
const DAMAGED = ['null', '[]', '{"wrong":"shape"}', '7', '"text"', '{"nextSnapshot":', ''];

describe('saved JSON files are validated against their shape', () => {
  for (const k of KINDS) {
    it(`${k.kind}: what varve writes reads back`, async () => {
      for (const body of k.good) {
        const store = new MemoryStore({ uri: 'memory://warehouse' });
        await store.put(k.key, utf8(JSON.stringify(body)));
        const read = await k.read(store);
        expect(read, JSON.stringify(body)).toBeDefined();
      }
    });

    it(`${k.kind}: null, [], a wrong shape or no JSON is a CorruptMetadataError naming the file`, async () => {
      for (const body of DAMAGED) {
        const store = new MemoryStore({ uri: 'memory://warehouse' });
        await store.put(k.key, utf8(body));
        const e = await k.read(store).then(
          () => undefined,
          (err: unknown) => err,
        );
        expect(e, `${k.kind} holding ${JSON.stringify(body)}`).toBeInstanceOf(CorruptMetadataError);
        const location = objectLocation(store, k.key);
        expect(location).toBe(`memory://warehouse/${k.key}`);
        expect((e as CorruptMetadataError).message).toContain(location);
        expect((e as CorruptMetadataError).file).toBe(location);
        expect((e as CorruptMetadataError).retryable).toBe(false);
      }
    });
  }

  it('a field of the wrong type is named with its path and what was expected', async () => {
    const store = new MemoryStore({ uri: 'memory://warehouse' });
    await store.put(`${T}/consumer/consumer-c1`, utf8(JSON.stringify({ nextSnapshot: 2, buckets: { 'bucket-0': { nextSnapshot: '2', lastPlanned: 3 } } })));
    await expect(readConsumer(store, T, 'c1')).rejects.toThrow(
      /^memory:\/\/warehouse\/db\.db\/t\/consumer\/consumer-c1 is damaged: buckets\.bucket-0\.nextSnapshot: expected number, got "2"; /,
    );
    await store.put(`${T}/consumer/consumer-c1`, utf8(JSON.stringify({ lastUpdated: 1 })));
    await expect(readConsumer(store, T, 'c1')).rejects.toThrow(/consumer-c1 is damaged: nextSnapshot is missing; /);
  });

  it('a snapshot property holding JSON names the property and the snapshot', () => {
    const snapshot = (value: string) => ({ id: 9, properties: { 'varve.identifiers': value } }) as unknown as Snapshot;
    expect(batchIdentifiersOf(snapshot('["a","b"]'))).toEqual(['a', 'b']);
    expect(batchIdentifiersOf(snapshot('[]'))).toEqual([]);
    for (const body of [...DAMAGED.filter((b) => b !== '[]'), '[1]']) {
      expect(() => batchIdentifiersOf(snapshot(body)), body).toThrow(CorruptMetadataError);
      expect(() => batchIdentifiersOf(snapshot(body)), body).toThrow(/the varve\.identifiers property of snapshot 9 is damaged/);
    }
  });

  it('a local warehouse names the file by its path', async () => {
    const { LocalStore } = await import('../lib/store/local-store.js');
    const store = new LocalStore('/tmp/varve-json-50%-wh');
    expect(objectLocation(store, `${T}/consumer/consumer-c1`)).toBe(`/tmp/varve-json-50%-wh/${T}/consumer/consumer-c1`);
  });
});
