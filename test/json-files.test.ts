/**
 * Every JSON file varve saves is read through lib/json.ts against a schema of its shape: for each
 * kind, what varve writes (older versions included) reads back, and a file holding `null`, `[]`,
 * an object of the wrong shape or no JSON at all is a CorruptMetadataError naming the file by its
 * full location. A guard keeps `JSON.parse(` out of lib/ and functions/ outside lib/json.ts.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CorruptMetadataError } from '../lib/errors.js';
import { readCurrentIcebergMetadata } from '../lib/iceberg/iceberg-metadata.js';
import { encodeCompactionJob, parseCompactionJob } from '../lib/maintenance/compaction-jobs.js';
import { listJournals } from '../lib/maintenance/expiry-journal.js';
import { readOrphanScanMarker } from '../lib/maintenance/remove-orphans.js';
import { rollbackTo } from '../lib/maintenance/rollback.js';
import { readManifestFile } from '../lib/manifest/manifest-file.js';
import { readManifestListContent } from '../lib/manifest/manifest-list.js';
import type { DataFileMeta } from '../lib/manifest/types.js';
import { readSchema } from '../lib/schema/schema-manager.js';
import { tryReadChangelog } from '../lib/snapshot/changelog.js';
import { SnapshotManager } from '../lib/snapshot/snapshot-manager.js';
import { readTag } from '../lib/snapshot/tags.js';
import { encodeSplitMessage, loadSplitMessage, parseSplitMessage } from '../lib/stream/split-message.js';
import { encodeCommitMessage, parseCommitMessage } from '../lib/table/commit-message.js';
import { listPending } from '../lib/table/pending-commits.js';
import type { Table } from '../lib/table/table.js';
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

const ROOT = join(__dirname, '..');
const T = 'db.db/t';

/** One kind of saved JSON file: where it is, bodies varve writes (current and older), and its reader. */
interface FileKind {
  kind: string;
  key: string;
  /** Bodies varve writes; the kinds read by hand-written checkers (snapshots, manifests, …) are read back by the whole suite. */
  good: Record<string, unknown>[];
  read: (store: ObjectStore) => Promise<unknown>;
  /** A body of DAMAGED that is valid for this kind (an empty split file list). */
  valid?: string;
}

/** What the table-level readers use of a Table. */
const tableOn = (store: ObjectStore) => ({ store, path: T, name: 'db.t' }) as unknown as Table;

const FILE: DataFileMeta = {
  fileName: 'data-1.parquet',
  fileSize: 10,
  rowCount: 1,
  minKey: [1],
  maxKey: [1],
  sequenceBase: 0,
  minSequenceNumber: 0,
  maxSequenceNumber: 0,
  schemaId: 0,
  level: 0,
  creationTime: 1,
  deleteRowCount: 0,
  fileSource: 'APPEND',
};

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
      {
        id: 'c1',
        nextSnapshot: 3,
        lastUpdated: 1,
        expiredAt: 2,
        reason: 'idle',
        delivered: { 'bucket-0': 4 },
        fullSnapshot: 1,
        leaseToken: 7,
        run: 'r',
      },
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
  { kind: 'snapshot', key: `${T}/snapshot/snapshot-3`, good: [], read: (s) => new SnapshotManager(s, T).tryRead(3) },
  {
    kind: 'manifest list',
    key: `${T}/manifest/manifest-list-a-1`,
    good: [],
    read: (s) => readManifestListContent(s, T, 'manifest-list-a-1'),
  },
  {
    kind: 'manifest',
    key: `${T}/manifest/manifest-a-0`,
    good: [],
    read: (s) => readManifestFile(s, T, 'manifest-a-0'),
  },
  { kind: 'tag', key: `${T}/tag/tag-first`, good: [], read: (s) => readTag(s, T, 'first') },
  { kind: 'long-lived changelog', key: `${T}/changelog/changelog-4`, good: [], read: (s) => tryReadChangelog(s, T, 4) },
  { kind: 'expiry journal', key: `${T}/expiry/expiry-5`, good: [], read: (s) => listJournals(tableOn(s)) },
  { kind: 'schema', key: `${T}/schema/schema-0`, good: [], read: (s) => readSchema(s, T, 0) },
  {
    kind: 'rollback journal',
    key: `${T}/rollback/rollback`,
    good: [],
    read: (s) => rollbackTo(tableOn(s), { snapshotId: 1 }),
  },
  {
    kind: 'pending commit registration',
    key: `${T}/pending/pending-0123.json`,
    good: [
      { commitIdentifier: 'b1', files: [`${T}/bucket-0/data-1.parquet`], registeredAt: 1 },
      { commitIdentifier: 'b1', files: [], sources: ['sqs:1'], registeredAt: 1 },
    ],
    read: (s) => listPending(tableOn(s)),
  },
  {
    kind: 'orphan scan marker',
    key: `${T}/orphan/scan-marker.json`,
    good: [
      { v: 1, startAfter: `${T}/bucket-0/data-1.parquet` },
      { v: 1, startAfter: `${T}/bucket-0/data-1.parquet`, cycleStartedAt: 1, listed: 10 },
    ],
    read: (s) => readOrphanScanMarker(tableOn(s)),
  },
  {
    kind: 'split file list',
    key: `${T}/consumer/consumer-c1@splits/3/bucket-0.json`,
    good: [{ files: [FILE], beforeFiles: [FILE] }, { files: [FILE] }],
    valid: '[]',
    read: (s) =>
      loadSplitMessage(s, { ...splitEnvelope(), filesRef: `${T}/consumer/consumer-c1@splits/3/bucket-0.json` }),
  },
  {
    kind: 'Iceberg table metadata',
    key: `${T}/metadata/v3.metadata.json`,
    good: [],
    read: (s) =>
      readCurrentIcebergMetadata(s, {
        storage: 'table-location',
        metadataDir: `${T}/metadata/`,
        tableUri: 'memory://warehouse/db.db/t',
      }),
  },
];

function splitEnvelope() {
  const { files: _files, ...rest } = parseSplitMessage(
    JSON.stringify({
      v: 1,
      table: 'db.t',
      tablePath: T,
      consumerId: 'c1',
      run: 'r',
      snapshotId: 3,
      partition: '',
      bucket: 0,
      totalBuckets: 1,
      kind: 'delta',
      files: [],
    }),
  );
  return rest;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Bodies no varve writes for any kind. */
const DAMAGED = ['null', '[]', '{"wrong":"shape"}', '7', '"text"', '{"nextSnapshot":', ''];

describe('saved JSON files are validated against their shape', () => {
  for (const k of KINDS) {
    if (k.good.length > 0)
      it(`${k.kind}: what varve writes reads back`, async () => {
        for (const body of k.good) {
          const store = new MemoryStore({ uri: 'memory://warehouse' });
          await store.put(k.key, utf8(JSON.stringify(body)));
          const read = await k.read(store);
          expect(read, JSON.stringify(body)).toBeDefined();
          if (Array.isArray(read)) expect(read).toHaveLength(1);
        }
      });

    it(`${k.kind}: null, [], a wrong shape or no JSON is a CorruptMetadataError naming the file`, async () => {
      for (const body of DAMAGED.filter((b) => b !== k.valid)) {
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
        // The kinds read by hand-written checkers name the file in the message only, or as `<kind> <location>`.
        if ((e as CorruptMetadataError).file !== undefined)
          expect((e as CorruptMetadataError).file).toContain(location);
        expect((e as CorruptMetadataError).retryable).toBe(false);
      }
    });
  }

  it('a field of the wrong type is named with its path and what was expected', async () => {
    const store = new MemoryStore({ uri: 'memory://warehouse' });
    await store.put(
      `${T}/consumer/consumer-c1`,
      utf8(JSON.stringify({ nextSnapshot: 2, buckets: { 'bucket-0': { nextSnapshot: '2', lastPlanned: 3 } } })),
    );
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
      expect(() => batchIdentifiersOf(snapshot(body)), body).toThrow(
        /the varve\.identifiers property of snapshot 9 is damaged/,
      );
    }
  });

  it('a split file list also reads in its plain array form, and each file is checked', async () => {
    const store = new MemoryStore({ uri: 'memory://warehouse' });
    const key = `${T}/consumer/consumer-c1@splits/3/bucket-0.json`;
    await store.put(key, utf8(JSON.stringify([FILE])));
    expect((await loadSplitMessage(store, { ...splitEnvelope(), filesRef: key })).files).toEqual([FILE]);
    await store.put(key, utf8(JSON.stringify([{ ...FILE, rowCount: 'one' }])));
    await expect(loadSplitMessage(store, { ...splitEnvelope(), filesRef: key })).rejects.toThrow(
      `split file list memory://warehouse/${key}: field 'rowCount'`,
    );
  });

  it('a local warehouse names the file by its path', async () => {
    const { LocalStore } = await import('../lib/store/local-store.js');
    const store = new LocalStore('/tmp/varve-json-50%-wh');
    expect(objectLocation(store, `${T}/consumer/consumer-c1`)).toBe(`/tmp/varve-json-50%-wh/${T}/consumer/consumer-c1`);
  });
});

describe('messages varve sends itself are validated against their shape', () => {
  const messages = [
    {
      kind: 'commit-queue message',
      good: encodeCommitMessage({
        table: 'db.t',
        schemaId: 0,
        commitIdentifier: 'b1',
        batch: {
          rowCount: 1,
          newFiles: [{ partition: '', bucket: 0, totalBuckets: 1, file: FILE }],
          changelogFiles: [],
        },
      }),
      parse: (body: string) => parseCommitMessage(body),
    },
    {
      kind: 'compaction job',
      good: encodeCompactionJob({ table: 'db.t', partition: '', bucket: 0, snapshotId: 3 }),
      parse: (body: string) => parseCompactionJob(body),
    },
    {
      kind: 'split message',
      good: JSON.stringify({
        v: 1,
        table: 'db.t',
        tablePath: T,
        consumerId: 'c1',
        run: 'r',
        snapshotId: 3,
        partition: '',
        bucket: 0,
        totalBuckets: 1,
        kind: 'delta',
        files: [FILE],
      }),
      parse: (body: string) => parseSplitMessage(body),
    },
  ];
  for (const m of messages) {
    it(`${m.kind}: what varve sends parses; null, [], a wrong shape or no JSON is a CorruptMetadataError`, () => {
      expect(m.parse(m.good)).toBeDefined();
      for (const body of DAMAGED) {
        expect(() => m.parse(body), body).toThrow(CorruptMetadataError);
        expect(() => m.parse(body), body).toThrow(`a ${m.kind} is not one varve sent`);
      }
    });
  }

  it('a split message sent by the encoder parses back to the same split', async () => {
    const store = new MemoryStore();
    const split = {
      table: 'db.t',
      tablePath: T,
      consumerId: 'c1',
      run: 'r',
      snapshotId: 3,
      partition: 'p=1',
      bucket: 2,
      totalBuckets: 4,
      kind: 'overwrite' as const,
      files: [FILE],
      beforeFiles: [FILE],
      prev: 2,
    };
    for (const maxInline of [1_000_000, 10]) {
      const { request } = await encodeSplitMessage(store, split, maxInline);
      expect(await loadSplitMessage(store, parseSplitMessage(request.body))).toEqual(split);
    }
  });
});

describe('JSON.parse guard', () => {
  it('lib/ and functions/ parse JSON only through lib/json.ts', () => {
    const offenders: string[] = [];
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (name.endsWith('.ts')) {
          const rel = relative(ROOT, path);
          if (rel === join('lib', 'json.ts')) continue;
          readFileSync(path, 'utf8')
            .split('\n')
            .forEach((line, i) => {
              if (line.includes('JSON.parse(')) offenders.push(`${rel}:${i + 1}: ${line.trim()}`);
            });
        }
      }
    };
    walk(join(ROOT, 'lib'));
    walk(join(ROOT, 'functions'));
    expect(offenders).toEqual([]);
  });
});
