/**
 * Compaction output streams into the store's part-at-a-time upload (a temp file on a local
 * folder, a multipart upload on S3): a failure in the middle of an output file aborts its upload,
 * so the job leaves neither the file nor a temp file behind, and the table reads as before.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { compactBucket } from '../../lib/maintenance/compact.js';
import { RowKind } from '../../lib/schema/types.js';
import { LocalStore } from '../../lib/store/local-store.js';
import type { ObjectUpload } from '../../lib/store/object-store.js';
import { newTable, readState, sorted, writeChanges, type Change } from './fixtures.js';

/** A folder store whose uploads fail just after their `failAt`-th write (0: never); counts uploads begun and completed. */
class FailingUploads extends LocalStore {
  begun = 0;
  completed = 0;
  constructor(dir: string, private readonly failAt: number) {
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
        const changes: Change[] = Array.from({ length: 300 }, (_, k) => ({ row: { id: k * 4 + i, region: 'eu', v: BigInt(i), s: `r${i}` }, kind: RowKind.INSERT }));
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
        expect(store.completed).toBeGreaterThanOrEqual(1);
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
});
