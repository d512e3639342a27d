import { describe, expect, it } from 'vitest';
import { CorruptMetadataError } from '../../lib/errors.js';
import { MetadataFileNamer } from '../../lib/manifest/file-names.js';
import { LruManifestCache, readManifestFile, writeManifestFiles } from '../../lib/manifest/manifest-file.js';
import { readManifestList, writeManifestList } from '../../lib/manifest/manifest-list.js';
import { manifestKey } from '../../lib/manifest/table-paths.js';
import { utf8 } from '../../lib/store/object-store.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { entry } from './factories.js';

const T = 'db.db/t';

describe('manifest files', () => {
  it('round-trip entries and summarise them for pruning', async () => {
    // Prepare
    const store = new MemoryStore();
    const entries = [
      entry('ADD', 'a', { level: 2 }, { partition: 'dt=2', bucket: 3 }),
      entry('DELETE', 'b', { level: 0 }, { partition: 'dt=1', bucket: 1 }),
      entry('ADD', 'c', { level: 1, minKey: ['x', 1], maxKey: ['y', null] }, { partition: 'dt=3', bucket: 0 }),
    ];
    // Act
    const [meta, ...rest] = await writeManifestFiles(store, T, entries, {
      namer: new MetadataFileNamer(),
      schemaId: 4,
    });
    const back = await readManifestFile(store, T, meta.fileName);
    // Assess
    expect(rest).toEqual([]);
    expect(back).toEqual(entries);
    expect(meta.fileName).toMatch(/^manifest-[0-9a-f-]{36}-\d+$/);
    expect(meta).toMatchObject({
      numAddedFiles: 2,
      numDeletedFiles: 1,
      schemaId: 4,
      minBucket: 0,
      maxBucket: 3,
      minLevel: 0,
      maxLevel: 2,
      minPartition: 'dt=1',
      maxPartition: 'dt=3',
    });
    expect(meta.fileSize).toBe((await store.get(manifestKey(T, meta.fileName))).body.length);
  });

  it('roll into a new file once one reaches the target size, keeping entry order', async () => {
    const store = new MemoryStore();
    const entries = Array.from({ length: 40 }, (_, i) => entry('ADD', `f-${i}`));
    const target = 2000;
    const metas = await writeManifestFiles(store, T, entries, {
      namer: new MetadataFileNamer(),
      schemaId: 0,
      targetFileSize: target,
    });
    expect(metas.length).toBeGreaterThan(3);
    for (const m of metas.slice(0, -1)) expect(m.fileSize).toBeGreaterThanOrEqual(target);
    for (const m of metas) expect(m.fileSize).toBeLessThan(target + 600);
    const back = (await Promise.all(metas.map((m) => readManifestFile(store, T, m.fileName)))).flat();
    expect(back.map((e) => e.file.fileName)).toEqual(entries.map((e) => e.file.fileName));
    expect(new Set(metas.map((m) => m.fileName)).size).toBe(metas.length);
  });

  it('write nothing for no entries', async () => {
    const store = new MemoryStore();
    expect(await writeManifestFiles(store, T, [], { namer: new MetadataFileNamer(), schemaId: 0 })).toEqual([]);
    expect(store.keys()).toEqual([]);
  });

  it.each([
    ['not JSON', 'garbage{'],
    ['not an object', '[1,2]'],
    ['an unknown version', '{"version":9,"entries":[]}'],
    ['entries not an array', '{"version":1,"entries":{}}'],
    ['a bad kind', '{"version":1,"entries":[{"kind":"MOVE","partition":"","bucket":0,"totalBuckets":1,"file":{}}]}'],
    [
      'a file without a name',
      '{"version":1,"entries":[{"kind":"ADD","partition":"","bucket":0,"totalBuckets":1,"file":{"fileSource":"APPEND"}}]}',
    ],
  ])('are CorruptMetadataError when %s', async (_what, text) => {
    const store = new MemoryStore();
    await store.put(manifestKey(T, 'manifest-bad-0'), utf8(text));
    await expect(readManifestFile(store, T, 'manifest-bad-0')).rejects.toThrow(CorruptMetadataError);
  });

  it('are read once through a cache', async () => {
    const store = new MemoryStore();
    const [m] = await writeManifestFiles(store, T, [entry('ADD', 'a')], {
      namer: new MetadataFileNamer(),
      schemaId: 0,
    });
    const cache = new LruManifestCache(10);
    store.resetCallLog();
    await readManifestFile(store, T, m.fileName, cache);
    await readManifestFile(store, T, m.fileName, cache);
    expect(store.callLog.filter((c) => c.op === 'get')).toHaveLength(1);
  });

  it('LRU cache evicts the least recently used manifests beyond its entry budget', () => {
    const cache = new LruManifestCache(3);
    cache.set('m1', [entry('ADD', 'a'), entry('ADD', 'b')]);
    cache.set('m2', [entry('ADD', 'c')]);
    cache.get('m1');
    cache.set('m3', [entry('ADD', 'd')]);
    expect(cache.get('m2')).toBeUndefined();
    expect(cache.get('m1')).toBeDefined();
    expect(cache.get('m3')).toBeDefined();
  });
});

describe('manifest lists', () => {
  it('round-trip their rows under unique names', async () => {
    const store = new MemoryStore();
    const namer = new MetadataFileNamer();
    const metas = await writeManifestFiles(store, T, [entry('ADD', 'a'), entry('ADD', 'b')], { namer, schemaId: 0 });
    const name1 = await writeManifestList(store, T, metas, namer);
    const name2 = await writeManifestList(store, T, [], namer);
    expect(name1).toMatch(/^manifest-list-[0-9a-f-]{36}-\d+$/);
    expect(name2).not.toBe(name1);
    expect(await readManifestList(store, T, name1)).toEqual(metas);
    expect(await readManifestList(store, T, name2)).toEqual([]);
  });

  it('are CorruptMetadataError on garbage', async () => {
    const store = new MemoryStore();
    await store.put(manifestKey(T, 'manifest-list-x-0'), utf8('{"version":1,"manifests":[{"fileName":3}]}'));
    await expect(readManifestList(store, T, 'manifest-list-x-0')).rejects.toThrow(CorruptMetadataError);
  });
});
