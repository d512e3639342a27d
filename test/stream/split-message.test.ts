/** Split messages: the wire round trip, file lists by reference, ids SQS accepts. */
import { describe, expect, it } from 'vitest';
import { CorruptMetadataError } from '../../lib/errors.js';
import type { DataFileMeta } from '../../lib/manifest/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import {
  decodeSplitMessage,
  encodeSplitMessage,
  queueId,
  splitDedupId,
  splitGroupId,
  type SplitMessage,
} from '../../lib/stream/split-message.js';

function file(n: number): DataFileMeta {
  return {
    fileName: `data-${n}.parquet`,
    fileSize: 100,
    rowCount: 3,
    minKey: [1],
    maxKey: [9],
    sequenceBase: n * 10,
    minSequenceNumber: n * 10,
    maxSequenceNumber: n * 10 + 2,
    schemaId: 0,
    level: 0,
    creationTime: 0,
    deleteRowCount: 0,
    fileSource: 'APPEND',
  };
}

function message(files: number): SplitMessage {
  return {
    table: 'db.t',
    tablePath: 'db.db/t',
    consumerId: 'c',
    run: 'run-1234-abcd',
    snapshotId: 7,
    partition: 'dt=2024-05-01',
    bucket: 3,
    totalBuckets: 4,
    kind: 'delta',
    prev: 5,
    files: Array.from({ length: files }, (_, i) => file(i)),
  };
}

describe('split messages', () => {
  it('round-trip inline, with group = table/partition/bucket and a dedup id naming consumer, run, snapshot and bucket', async () => {
    const store = new MemoryStore();
    const { request, byReference } = await encodeSplitMessage(store, message(2));
    expect(byReference).toBe(false);
    expect(request.groupId).toBe('db.t/dt=2024-05-01/3');
    expect(request.dedupId).toBe('c/run-1234/7/dt=2024-05-01/3');
    expect(await decodeSplitMessage(store, request.body)).toEqual(message(2));
  });

  it("send a large file list by reference, under the consumer file's name", async () => {
    const store = new MemoryStore();
    const { request, byReference } = await encodeSplitMessage(store, message(50), 2000);
    expect(byReference).toBe(true);
    expect(request.body.length).toBeLessThan(2000);
    expect(JSON.parse(request.body).filesRef).toBe('db.db/t/consumer/consumer-c@splits/7/dt=2024-05-01/bucket-3.json');
    expect(await decodeSplitMessage(store, request.body)).toEqual(message(50));
  });

  it("carry an overwrite split's files before and after, and its schema id, inline and by reference", async () => {
    const store = new MemoryStore();
    const overwrite: SplitMessage = {
      ...message(30),
      kind: 'overwrite',
      schemaId: 2,
      beforeFiles: Array.from({ length: 20 }, (_, i) => file(100 + i)),
    };
    const inline = await encodeSplitMessage(store, overwrite);
    expect(inline.byReference).toBe(false);
    expect(await decodeSplitMessage(store, inline.request.body)).toEqual(overwrite);
    const byRef = await encodeSplitMessage(store, overwrite, 2000);
    expect(byRef.byReference).toBe(true);
    expect(JSON.parse(byRef.request.body).beforeFiles).toBeUndefined();
    expect(await decodeSplitMessage(store, byRef.request.body)).toEqual(overwrite);
  });

  it('hash ids SQS would refuse (too long, not printable ASCII), deterministically', () => {
    const long = splitGroupId('db.t', `p=${'x'.repeat(200)}`, 1);
    const unicode = splitDedupId('c', 'run', 1, 'city=Zürich', 0);
    for (const id of [long, unicode]) {
      expect(id.length).toBeLessThanOrEqual(128);
      expect(id).toMatch(/^[\x21-\x7e]+$/);
    }
    expect(splitGroupId('db.t', `p=${'x'.repeat(200)}`, 1)).toBe(long);
    expect(splitGroupId('db.t', `p=${'x'.repeat(200)}`, 2)).not.toBe(long);
    expect(queueId('a b')).not.toBe(queueId('a_b'));
  });

  it('refuse a body that is not a split message', async () => {
    await expect(decodeSplitMessage(new MemoryStore(), '{"hello": 1}')).rejects.toBeInstanceOf(CorruptMetadataError);
    await expect(decodeSplitMessage(new MemoryStore(), 'nope')).rejects.toBeInstanceOf(CorruptMetadataError);
  });
});
