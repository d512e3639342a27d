/**
 * Compaction output streams into the store's part-at-a-time upload (a temp file on a local
 * folder, a multipart upload on S3): a failure in the middle of an output file aborts its upload,
 * so the job leaves neither the file nor a temp file behind, and the table reads as before.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { ListMultipartUploadsCommand, UploadPartCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it } from 'vitest';
import { compactBucket } from '../../lib/maintenance/compact.js';
import { RowKind } from '../../lib/schema/types.js';
import { LocalStore } from '../../lib/store/local-store.js';
import type { ObjectUpload } from '../../lib/store/object-store.js';
import { ChangelogReplay, newTable, readState, sorted, writeChanges, type Change } from './fixtures.js';
import { readChangelogFiles, readLiveFiles } from '../../lib/manifest/scan.js';
import { listAll } from '../../lib/store/object-store.js';
import { S3Store, defaultS3Client } from '../../lib/store/s3-store.js';
import { awsAvailable, freshBucket } from '../helpers/aws.js';
import { rng, testSeed } from '../helpers/random.js';

/** A folder store whose uploads fail just after their `failAt`-th write (0: never); counts uploads begun and completed. */
class FailingUploads extends LocalStore {
  begun = 0;
  completed = 0;
  /** File names of completed uploads, in completion order. */
  readonly order: string[] = [];
  constructor(
    dir: string,
    private readonly failAt: number,
  ) {
    super(dir);
  }
  override upload(key: string): ObjectUpload {
    const inner = super.upload(key);
    this.begun++;
    let writes = 0;
    return {
      write: async (bytes) => {
        // The bytes reach the temp file first: the abort must remove it.
        await inner.write(bytes);
        if (++writes === this.failAt) throw new Error(`injected: disk gone while writing ${key}`);
      },
      complete: async () => {
        const r = await inner.complete();
        this.completed++;
        this.order.push(key.slice(key.lastIndexOf('/') + 1));
        return r;
      },
      abort: () => inner.abort(),
    };
  }
}

async function filesUnder(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).filter((f) => f.includes('bucket-')).sort();
}

describe('compaction output upload', () => {
  let dir: string;
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('streams each output file through the store upload, and a failure mid-file leaves nothing behind', async () => {
    // Prepare: overlapping level-0 files; output files of a few row groups each.
    dir = await mkdtemp(join(os.tmpdir(), 'varve-compact-upload-'));
    for (const failAt of [0, 1]) {
      const root = join(dir, `fail-${failAt}`);
      const store = new FailingUploads(root, failAt);
      const table = await newTable({ 'write-only': 'true', 'changelog-producer': 'lookup' }, store);
      for (let i = 0; i < 4; i++) {
        const changes: Change[] = Array.from({ length: 300 }, (_, k) => ({
          row: { id: k * 4 + i, region: 'eu', v: BigInt(i), s: `r${i}` },
          kind: RowKind.INSERT,
        }));
        await writeChanges(table, changes);
      }
      const before = sorted(await readState(table));
      const filesBefore = await filesUnder(root);

      // Act
      const run = compactBucket(table, 'region=eu', 0, { full: true });

      // Assess
      if (failAt === 0) {
        await run;
        // Every output (data and changelog) went through an upload.
        expect(store.completed).toBeGreaterThanOrEqual(2);
        expect(store.completed).toBe(store.begun);
      } else {
        await expect(run).rejects.toThrow(/injected/);
        expect(store.completed).toBe(0);
        // No output, no temp file: exactly the files there were.
        expect(await filesUnder(root)).toEqual(filesBefore);
      }
      expect(sorted(await readState(table))).toEqual(before);
    }
  });

  it('the lookup changelog of a bucket larger than the memory budget streams into rolling changelog files as it is found', async () => {
    // Prepare: four overlapping level-0 files of 400 rows; a 1-byte budget (every section spills)
    // and 2 kb files, so the changelog (1,200 rows of level 0 over 400 higher rows) needs many files.
    dir = await mkdtemp(join(os.tmpdir(), 'varve-compact-upload-'));
    const store = new FailingUploads(join(dir, 'lookup'), 0);
    const table = await newTable(
      {
        'write-only': 'true',
        'changelog-producer': 'lookup',
        'compaction.memory-budget': '1 b',
        'target-file-size': '2 kb',
      },
      store,
    );
    const replay = new ChangelogReplay(table);
    await writeChanges(
      table,
      Array.from({ length: 400 }, (_, k) => ({
        row: { id: k, region: 'eu', v: 0n, s: 'first' },
        kind: RowKind.INSERT,
      })),
    );
    await compactBucket(table, 'region=eu', 0, { full: true });
    store.order.length = 0;
    for (let i = 1; i <= 3; i++) {
      await writeChanges(
        table,
        Array.from({ length: 400 }, (_, k) => ({
          row: { id: k * 2 + i, region: 'eu', v: BigInt(i), s: `w${i}` },
          kind: k % 7 === 0 ? RowKind.DELETE : RowKind.INSERT,
        })),
      );
    }

    // Act
    const result = await compactBucket(table, 'region=eu', 0, {});

    // Assess: several changelog files, all written during the lookup pass (before any data file of
    // the rewrite), and the changelog replays to the table.
    expect(result.changelogFiles).toBeGreaterThan(2);
    const firstData = store.order.findIndex((f) => f.startsWith('data-'));
    expect(store.order.slice(0, result.changelogFiles).every((f) => f.startsWith('changelog-'))).toBe(true);
    expect(firstData).toBe(result.changelogFiles);
    const snapshot = await table.snapshots.read((await table.snapshots.latestId())!);
    expect((await readChangelogFiles(table.store, table.path, snapshot)).length).toBe(result.changelogFiles);
    expect(sorted(await replay.advance())).toEqual(sorted(await readState(table)));
  });
});

/** Counts the client's requests by command name; `fault.uploadPart` = n fails the n-th UploadPart counted. */
function instrument(client: S3Client, fault: { uploadPart?: number }): Map<string, number> {
  const counts = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? '?';
      counts.set(name, (counts.get(name) ?? 0) + 1);
      if (name === UploadPartCommand.name && counts.get(name) === fault.uploadPart) {
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

describe.skipIf(!awsAvailable())('compaction output as an S3 multipart upload (moto)', () => {
  it('a failed part fails the compaction with nothing committed and no open upload; then it goes up in parts and reads back exactly', async () => {
    const MiB = 1024 * 1024;
    const seed = testSeed('maintenance.compact-upload.s3');
    const r = rng(seed);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    // 270,000 keys with 28 random characters each, then 2,000 updates: the full compaction writes
    // one data file of > 5 MiB (131,072-row groups; a part is cut between row groups), so two parts.
    const rows = Array.from({ length: 270_000 }, (_, id) => {
      let s = '';
      for (let c = 0; c < 28; c++) s += alphabet[r.int(0, 63)];
      return { id, region: 'eu', v: BigInt(id), s };
    });
    const updates = Array.from({ length: 2_000 }, (_, k) => ({ id: k * 135, region: 'eu', v: -1n, s: `updated-${k}` }));
    // Prepare: one table on S3 with 5 MiB parts, two overlapping level-0 files.
    const bucket = await freshBucket();
    const client = defaultS3Client();
    const store = new S3Store({ bucket, prefix: 'wh', client, multipartPartSize: 5 * MiB });
    const table = await newTable({ bucket: '1', 'write-only': 'true' }, store);
    await writeChanges(
      table,
      rows.map((row) => ({ row, kind: RowKind.INSERT })),
    );
    await writeChanges(
      table,
      updates.map((row) => ({ row, kind: RowKind.INSERT })),
    );
    const before = sorted(await readState(table));
    const snapshotBefore = (await table.snapshots.latestId())!;
    const objectsBefore = await listAll(store, '');
    const openUploads = async () =>
      (await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads ?? [];
    const fault: { uploadPart?: number } = { uploadPart: 2 };
    const counts = instrument(client, fault);
    const msg = `seed ${seed}`;

    // Act 1: the second (last) part fails.
    await expect(compactBucket(table, 'region=eu', 0, { full: true }), msg).rejects.toThrow(/injected/);

    // Assess 1: aborted, nothing committed, no object left, no open upload.
    expect(counts.get('UploadPartCommand'), msg).toBe(2);
    expect(counts.get('AbortMultipartUploadCommand'), msg).toBe(1);
    expect(counts.get('CompleteMultipartUploadCommand') ?? 0, msg).toBe(0);
    expect(await table.snapshots.latestId(), msg).toBe(snapshotBefore);
    expect(await listAll(store, ''), msg).toEqual(objectsBefore);
    expect(await openUploads(), msg).toEqual([]);

    // Act 2: the same compaction without a fault.
    counts.clear();
    fault.uploadPart = undefined;
    await compactBucket(table, 'region=eu', 0, { full: true });

    // Assess 2: one data file (> 5 MiB) uploaded in two parts, committed, the rows exactly as before.
    expect(counts.get('CreateMultipartUploadCommand'), msg).toBe(1);
    expect(counts.get('UploadPartCommand'), msg).toBe(2);
    expect(counts.get('CompleteMultipartUploadCommand'), msg).toBe(1);
    expect(await table.snapshots.latestId(), msg).toBe(snapshotBefore + 1);
    const live = await readLiveFiles(table.store, table.path, (await table.snapshots.latest())!);
    expect(live.length, msg).toBe(1);
    expect(live[0].file.fileSize, msg).toBeGreaterThan(5 * MiB);
    expect(live[0].file.rowCount, msg).toBe(rows.length);
    expect(sorted(await readState(table)), msg).toEqual(before);
    expect(await openUploads(), msg).toEqual([]);
    client.destroy();
    // Sized by work, not by time: two parts need an output of more than 5 MiB cut between row
    // groups (compaction writes 131,072-row groups, a part is cut only between the encoder's writes), so 272,000 rows are
    // written, compacted twice and read back twice. That is ≈ 21 s of CPU idle; measured 118 s of
    // wall time beside a suite at load 30, so the default 120 s is no margin.
  }, 400_000);
});
