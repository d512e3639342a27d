import { describe, expect, it } from 'vitest';
import { fileIdentity } from '../../lib/manifest/file-entries.js';
import { MetadataFileNamer } from '../../lib/manifest/file-names.js';
import { CorruptMetadataError } from '../../lib/errors.js';
import {
  encodeManifestFiles,
  LruManifestCache,
  putManifestFiles,
  readManifestFile,
  writeManifestFiles,
} from '../../lib/manifest/manifest-file.js';
import { writeCombinedManifestList } from '../../lib/manifest/manifest-list.js';
import {
  encodeMergedParts,
  encodeMergeWithDelta,
  mergeManifests,
  planManifestMerge,
} from '../../lib/manifest/merge.js';
import {
  foldLiveFiles,
  readDataManifests,
  readDeltaEntries,
  readEntries,
  readLiveFiles,
  readSnapshotLists,
} from '../../lib/manifest/scan.js';
import type { ManifestEntry, ManifestFileMeta } from '../../lib/manifest/types.js';
import type { Snapshot } from '../../lib/snapshot/snapshot.js';
import { commit, type CommitOptions, type CommitRequest, type FileChange } from '../../lib/snapshot/commit.js';
import { SnapshotManager } from '../../lib/snapshot/snapshot-manager.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { appendRequest, change, entry, testCommitOptions } from './factories.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';

const T = 't';

async function writeEach(store: MemoryStore, groups: ManifestEntry[][]): Promise<ManifestFileMeta[]> {
  const namer = new MetadataFileNamer();
  const out: ManifestFileMeta[] = [];
  for (const g of groups)
    out.push(...(await writeManifestFiles(store, T, g, { namer, schemaId: 0, targetFileSize: 1 << 30 })));
  return out;
}

async function live(store: MemoryStore, metas: readonly ManifestFileMeta[]): Promise<string[]> {
  return (await foldLiveFiles(store, T, metas)).map(fileIdentity).sort();
}

async function allEntries(store: MemoryStore, metas: readonly ManifestFileMeta[]): Promise<ManifestEntry[]> {
  return (await Promise.all(metas.map((m) => readManifestFile(store, T, m.fileName)))).flat();
}

/**
 * One random commit's entries, applied to `truth` (the live files by identity): up to 2 DELETEs of
 * live files (as compaction makes) and `adds` ADDs of new ones named by `name`.
 */
function randomDelta(rnd: Rng, truth: Map<string, ManifestEntry>, adds: number, name: () => string): ManifestEntry[] {
  const delta: ManifestEntry[] = [];
  const liveNow = [...truth.values()];
  for (let d = rnd.int(0, 2); d > 0 && liveNow.length > 0; d--) {
    const victim = liveNow.splice(rnd.int(0, liveNow.length - 1), 1)[0];
    delta.push({ ...victim, kind: 'DELETE' });
    truth.delete(fileIdentity(victim));
  }
  for (let a = adds; a > 0; a--) {
    const e = entry(
      'ADD',
      name(),
      { level: rnd.int(0, 2) },
      { partition: `p=${rnd.int(0, 2)}`, bucket: rnd.int(0, 1) },
    );
    delta.push(e);
    truth.set(fileIdentity(e), e);
  }
  return delta;
}

describe('mergeManifests, minor compaction', () => {
  it('leaves a short tail of small manifests alone', async () => {
    // Prepare
    const store = new MemoryStore();
    const input = await writeEach(store, [[entry('ADD', 'a')], [entry('ADD', 'b')], [entry('DELETE', 'a')]]);
    store.resetCallLog();
    // Act
    const out = await mergeManifests(store, T, input, new MetadataFileNamer(), { mergeMinCount: 5 });
    // Assess
    expect(out).toEqual(input);
    expect(store.callLog).toEqual([]);
  });

  it('merges the tail once it reaches merge-min-count, cancelling ADD/DELETE pairs', async () => {
    const store = new MemoryStore();
    const input = await writeEach(store, [
      [entry('ADD', 'a')],
      [entry('ADD', 'b')],
      [entry('DELETE', 'a')],
      [entry('ADD', 'c')],
      [entry('DELETE', 'x')],
    ]);
    const out = await mergeManifests(store, T, input, new MetadataFileNamer(), { mergeMinCount: 5 });
    expect(out).toHaveLength(1);
    const entries = await allEntries(store, out);
    expect(entries.map((e) => `${e.kind} ${e.file.fileName}`)).toEqual(['ADD b', 'ADD c', 'DELETE x']);
    expect(await live(store, out)).toEqual(await live(store, input));
  });

  it('keeps a manifest that alone reaches the target size, merging the groups around it', async () => {
    const store = new MemoryStore();
    const big = Array.from({ length: 30 }, (_, i) => entry('ADD', `big-${i}`));
    const input = await writeEach(store, [big, [entry('ADD', 's1')], [entry('ADD', 's2')], [entry('ADD', 's3')]]);
    const target = input[0].fileSize;
    const out = await mergeManifests(store, T, input, new MetadataFileNamer(), {
      targetFileSize: target,
      mergeMinCount: 3,
    });
    expect(out[0].fileName).toBe(input[0].fileName);
    expect(out).toHaveLength(2);
    expect(await live(store, out)).toEqual(await live(store, input));
  });
});

describe('mergeManifests, full compaction', () => {
  it('drops every DELETE and rewrites only the base manifests that hold deleted files', async () => {
    // Prepare: two full-sized base manifests in different partitions, then small deltas that
    // delete one file of partition p=1 only.
    const store = new MemoryStore();
    const base1 = Array.from({ length: 20 }, (_, i) => entry('ADD', `a-${i}`, {}, { partition: 'p=1' }));
    const base2 = Array.from({ length: 20 }, (_, i) => entry('ADD', `b-${i}`, {}, { partition: 'p=2' }));
    const input = await writeEach(store, [
      base1,
      base2,
      [entry('DELETE', 'a-3', {}, { partition: 'p=1' })],
      [entry('ADD', 'c', {}, { partition: 'p=1' })],
    ]);
    const target = Math.min(input[0].fileSize, input[1].fileSize);
    store.resetCallLog();
    // Act
    const out = await mergeManifests(store, T, input, new MetadataFileNamer(), {
      targetFileSize: target,
      fullCompactionThresholdSize: 1,
    });
    // Assess
    const reads = store.callLog.filter((c) => c.op === 'get').map((c) => c.key);
    expect(reads.some((k) => k.endsWith(input[1].fileName))).toBe(false); // pruned by partition range
    const entries = await allEntries(store, out);
    expect(entries.some((e) => e.kind === 'DELETE')).toBe(false);
    expect(await live(store, out)).toEqual(await live(store, input));
    expect(out.map((m) => m.fileName)).toContain(input[1].fileName);
    expect(out.map((m) => m.fileName)).not.toContain(input[0].fileName);
  });

  it('does not run below the threshold', async () => {
    const store = new MemoryStore();
    const input = await writeEach(store, [[entry('ADD', 'a')], [entry('DELETE', 'a')]]);
    const out = await mergeManifests(store, T, input, new MetadataFileNamer(), {
      fullCompactionThresholdSize: 1 << 20,
      mergeMinCount: 30,
    });
    expect(out).toEqual(input);
  });
});

describe('mergeManifests, randomized history', () => {
  it('keeps the live file set exact through many merges with random options', async () => {
    const rnd = rng(testSeed('merge randomized'));
    for (let round = 0; round < 6; round++) {
      const store = new MemoryStore();
      const opts = {
        targetFileSize: 300 + rnd.int(0, 3999),
        mergeMinCount: 2 + rnd.int(0, 7),
        fullCompactionThresholdSize: 500 + rnd.int(0, 19999),
      };
      const truth = new Map<string, ManifestEntry>();
      let metas: ManifestFileMeta[] = [];
      let counter = 0;
      for (let commit = 0; commit < 60; commit++) {
        // One commit: a few ADDs of new files, maybe DELETEs of live ones (as compaction does).
        const delta = randomDelta(rnd, truth, 1 + rnd.int(0, 2), () => `f-${counter++}`);
        const deltaMetas = await writeEach(store, [delta]);
        metas = await mergeManifests(store, T, [...metas, ...deltaMetas], new MetadataFileNamer(), opts);
      }
      expect(await live(store, metas), `round ${round} with ${JSON.stringify(opts)}`).toEqual([...truth.keys()].sort());
    }
  });
});

describe("a merge that takes a commit's delta into its manifest, randomized history", () => {
  it('keeps every state exact, reads back each delta as written, and writes no manifest for the delta', async () => {
    const rnd = rng(testSeed('merge with delta randomized'));
    let folded = 0;
    for (let round = 0; round < 6; round++) {
      const store = new MemoryStore();
      const cache = rnd.int(0, 1) === 0 ? new LruManifestCache() : undefined;
      const opts = {
        targetFileSize: 300 + rnd.int(0, 3999),
        mergeMinCount: 2 + rnd.int(0, 7),
        fullCompactionThresholdSize: 500 + rnd.int(0, 19999),
      };
      const label = `round ${round} with ${JSON.stringify(opts)}`;
      const truth = new Map<string, ManifestEntry>();
      let list: ManifestFileMeta[] = [];
      let counter = 0;
      for (let n = 0; n < 60; n++) {
        const delta = randomDelta(rnd, truth, rnd.int(0, 3), () => `f-${counter++}`);
        // Act: one commit's manifests, as commit-plan.ts makes them.
        const namer = new MetadataFileNamer();
        const plan = await planManifestMerge(store, T, list, opts, cache);
        const deltaFiles = encodeManifestFiles(delta, { namer, schemaId: 0, targetFileSize: 1 << 30 });
        const data = encodeMergeWithDelta(plan, namer, deltaFiles, 0);
        store.resetCallLog();
        await putManifestFiles(store, T, data.files, cache);
        if (data.delta.some((m) => m.slice !== undefined)) {
          folded++;
          // The delta went into the merge's last file: the commit wrote only what the merge writes.
          const merged = encodeMergedParts(plan, new MetadataFileNamer()).flat();
          expect(
            store.callLog.filter((c) => c.op === 'put'),
            label,
          ).toHaveLength(merged.length);
        }
        list = [...data.base, ...data.delta];
        // Assess: the state is exact, and the delta rows read back exactly this commit's entries.
        expect(await live(store, list), `${label}, commit ${n}`).toEqual([...truth.keys()].sort());
        const readBack = await readEntries(store, T, data.delta);
        expect(
          readBack.map((e) => `${e.kind} ${fileIdentity(e)}`),
          `${label}, commit ${n}`,
        ).toEqual(delta.map((e) => `${e.kind} ${fileIdentity(e)}`));
      }
    }
    expect(folded).toBeGreaterThan(0);
  });

  it('round-trips sliced rows through a manifest list (version 2) and refuses a slice past the file', async () => {
    const store = new MemoryStore();
    const namer = new MetadataFileNamer();
    const [m1, m2] = await writeEach(store, [[entry('ADD', 'a')], [entry('ADD', 'b')]]);
    const plan = await planManifestMerge(store, T, [m1, m2], { mergeMinCount: 2 });
    const data = encodeMergeWithDelta(
      plan,
      namer,
      encodeManifestFiles([entry('ADD', 'c'), entry('DELETE', 'a')], { namer, schemaId: 0 }),
      0,
    );
    await putManifestFiles(store, T, data.files);
    const name = await writeCombinedManifestList(store, T, data.base, data.delta, namer);
    const body = JSON.parse(new TextDecoder().decode((await store.get(`${T}/manifest/${name}`)).body)) as {
      version: number;
    };
    expect(body.version).toBe(2);
    const lists = await readSnapshotLists(store, T, { baseManifestList: name, deltaManifestList: name });
    expect(lists).toEqual({ base: data.base, delta: data.delta });
    expect(data.base[0].fileSize + data.delta[0].fileSize).toBe(data.files[0].body.length);
    expect((await readEntries(store, T, lists.delta)).map((e) => `${e.kind} ${e.file.fileName}`)).toEqual([
      'ADD c',
      'DELETE a',
    ]);
    expect(await live(store, [...lists.base, ...lists.delta])).toEqual(
      [entry('ADD', 'b'), entry('ADD', 'c')].map(fileIdentity).sort(),
    );
    await expect(readEntries(store, T, [{ ...data.delta[0], slice: [2, 9] }])).rejects.toThrow(CorruptMetadataError);
  });
});

describe('manifest merging over many commits', () => {
  async function manyCommits(label: string, mergeOpts: Partial<CommitOptions>): Promise<number> {
    // Prepare
    const store = new MemoryStore();
    const commitOpts = testCommitOptions({
      ...mergeOpts,
      snapshotManager: new SnapshotManager(store, T, { cacheSnapshots: true }),
      manifestCache: new LruManifestCache(),
    });
    const truth = new Set<string>();
    let l0: FileChange[] = [];
    let maxRead = 0;
    let maxBytes = 0;
    let maxManifestPuts = 0;
    let last: Snapshot | undefined;
    // Act: 1,000 commits; every 20th compacts the 19 level-0 files before it into one level-1 file.
    for (let n = 1; n <= 1000; n++) {
      let req: CommitRequest;
      if (n % 20 === 0) {
        const out = change(`l1-${n}`, {
          level: 1,
          minKey: [n * 10],
          maxKey: [n * 10 + 5],
          fileSource: 'COMPACT',
          rowCount: l0.length,
        });
        req = {
          commitUser: 'compactor',
          commitIdentifier: `k${n}`,
          kind: 'COMPACT',
          schemaId: 0,
          compactBefore: l0,
          compactAfter: [out],
        };
        for (const f of l0) truth.delete(f.file.fileName);
        truth.add(out.file.fileName);
        l0 = [];
      } else {
        const f = change(`f-${n}`);
        req = appendRequest('u', `c${n}`, [f]);
        l0.push({ ...f, file: { ...f.file } });
        truth.add(f.file.fileName);
      }
      store.resetCallLog();
      last = (await commit(store, T, req, commitOpts)).snapshot;
      const puts = store.callLog.filter((c) => c.op === 'put' && /\/manifest\/manifest-(?!list-)/.test(c.key)).length;
      maxManifestPuts = Math.max(maxManifestPuts, puts);
      // Each snapshot's delta is exactly its own commit's entries, also when it merged.
      const delta = (await readDeltaEntries(store, T, last)).map((e) => `${e.kind} ${e.file.fileName}`);
      const own =
        req.kind === 'COMPACT'
          ? [
              ...req.compactBefore!.map((f) => `DELETE ${f.file.fileName}`),
              ...req.compactAfter!.map((f) => `ADD ${f.file.fileName}`),
            ]
          : req.batches![0].newFiles.map((f) => `ADD ${f.file.fileName}`);
      expect(delta.sort(), `snapshot ${last.id}`).toEqual(own.sort());
      // What a scan of this snapshot reads: its base and delta manifests.
      const manifests = await readDataManifests(store, T, last);
      maxRead = Math.max(maxRead, manifests.length);
      maxBytes = Math.max(
        maxBytes,
        manifests.reduce((s, m) => s + m.fileSize, 0),
      );
    }
    // Assess
    const live = await readLiveFiles(store, T, last!);
    expect(live.map((e) => e.file.fileName).sort()).toEqual([...truth].sort());
    const finalRead = (await readDataManifests(store, T, last!)).length;
    // Bound: full-sized manifests of live entries, full-sized groups still holding DELETEs (below
    // the full-compaction threshold), a tail shorter than merge-min-count, and the delta.
    const target = mergeOpts.manifestTargetFileSize ?? 8 * 1024 * 1024;
    const liveBytes = live.reduce((s, e) => s + JSON.stringify(e).length, 0);
    const bound =
      Math.ceil(liveBytes / target) +
      Math.ceil((mergeOpts.manifestFullCompactionThresholdSize ?? 16 * 1024 * 1024) / target) +
      (mergeOpts.manifestMergeMinCount ?? 30) +
      1;
    console.log(
      `${label}: after 1000 commits a scan reads ${finalRead} manifests ` +
        `(max ${maxRead} over all 1000 snapshots, bound ${bound}; max ${maxBytes} bytes); ${live.length} live files`,
    );
    expect(maxRead).toBeLessThanOrEqual(bound);
    // A merging commit takes its own entries into the merged manifest: with manifests far below
    // the target size, every commit writes one manifest, merging or not.
    if (mergeOpts.manifestTargetFileSize === undefined) expect(maxManifestPuts).toBe(1);
    return maxManifestPuts;
  }

  it('keeps the manifests a scan reads bounded with the default options', async () => {
    await manyCommits('defaults (8 MB target, merge-min-count 30)', {});
  }, 120_000);

  it('keeps them bounded with small target and full-compaction thresholds', async () => {
    await manyCommits('small (8 KB target, min-count 10, full at 32 KB)', {
      manifestTargetFileSize: 8 * 1024,
      manifestMergeMinCount: 10,
      manifestFullCompactionThresholdSize: 32 * 1024,
    });
  }, 120_000);
});
