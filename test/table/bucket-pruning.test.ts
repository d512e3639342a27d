/**
 * Bucket pruning: a predicate that fixes every bucket-key column (`=` or IN, through AND / OR)
 * reads only the buckets its values hash to, by the frozen bucket function and each file's own
 * bucket count (a rescaled partition has another). Randomized over key types, partitions and a
 * rescale: every pruned read returns exactly the rows of an unpruned read filtered afterwards.
 */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { tableToRows } from '../../lib/format/columns.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { bucketOf } from '../../lib/schema/bucket.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { ReadExplain } from '../../lib/table/read-pruning.js';
import { rescaleTable } from '../../lib/table/rescale.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed } from '../helpers/random.js';

const show = (r: Record<string, unknown>) => JSON.stringify(r, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));

async function readWhere(t: Table, where: string): Promise<{ rows: string[]; explain: ReadExplain }> {
  let explain: ReadExplain | undefined;
  const rows = tableToRows(await t.read({ where, explain: (e) => (explain = e) }), t.schema.fields)
    .map(show)
    .sort();
  return { rows, explain: explain! };
}

/** The rows an unpruned read returns for `where`: every row read, the predicate applied to the merged result in memory. */
async function oracle(t: Table, model: (r: Record<string, unknown>) => boolean): Promise<string[]> {
  return tableToRows(await t.read(), t.schema.fields)
    .filter(model)
    .map(show)
    .sort();
}

describe('bucket pruning', () => {
  it('an equality on the whole bucket key reads one bucket per partition, also after a rescale of one partition', async () => {
    // Prepare
    const seed = testSeed('bucket-pruning');
    const r = rng(seed);
    const t0 = await new FolderCatalog(new MemoryStore()).createTable('db.t', {
      fields: parseSchemaText(
        'dt STRING NOT NULL, id BIGINT NOT NULL, price DECIMAL(10,2) NOT NULL, name STRING NOT NULL, v INT',
      ),
      primaryKeys: ['dt', 'id', 'price', 'name'],
      partitionKeys: ['dt'],
      options: { bucket: '4' },
    });
    const keys: Array<{ id: number; price: string; name: string }> = [];
    for (let i = 0; i < 60; i++)
      keys.push({
        id: r.int(-1000, 1000),
        price: `${r.int(0, 99)}.${r.pick(['5', '50', '05', '00'])}`,
        name: r.pick(['a', 'b', 'é', '日本', '']) + r.int(0, 9),
      });
    for (let w = 0; w < 4; w++) {
      await t0.write(keys.map((k) => ({ dt: r.pick(['x', 'y']), ...k, v: r.int(0, 9) })));
    }
    await rescaleTable(t0, { buckets: 3, partition: { dt: 'y' } });
    const t = await t0.latest();
    const live = await readLiveFiles(t.store, t.path, (await t.snapshots.latest())!);
    expect(new Set(live.map((e) => `${e.partition}:${e.totalBuckets}`))).toEqual(new Set(['dt=x:4', 'dt=y:3']));
    // Act + Assert
    for (let q = 0; q < 12; q++) {
      const k = r.pick(keys);
      const k2 = r.pick(keys);
      // A DECIMAL literal written with another number of decimals still names the stored value.
      const price = (p: string) => String(Number(p));
      const cases: Array<{ where: string; model: (x: Record<string, unknown>) => boolean; maxBuckets: number }> = [
        {
          where: `id = ${k.id} AND price = ${price(k.price)} AND name = '${k.name}'`,
          model: (x) => eq(x, k),
          maxBuckets: 2,
        },
        {
          where: `dt = 'y' AND id = ${k.id} AND price = ${k.price} AND name = '${k.name}' AND v >= 0`,
          model: (x) => x.dt === 'y' && eq(x, k) && (x.v as number) >= 0,
          maxBuckets: 1,
        },
        {
          where: `(id = ${k.id} AND price = ${k.price} AND name = '${k.name}') OR (id = ${k2.id} AND price = ${k2.price} AND name = '${k2.name}')`,
          model: (x) => eq(x, k) || eq(x, k2),
          maxBuckets: 4,
        },
        {
          where: `id IN (${k.id}, ${k2.id}) AND price = ${k.price} AND name = '${k.name}'`,
          model: (x) => (x.id === BigInt(k.id) || x.id === BigInt(k2.id)) && eq({ ...x, id: BigInt(k.id) }, k),
          maxBuckets: 4,
        },
      ];
      for (const c of cases) {
        const { rows, explain } = await readWhere(t, c.where);
        expect(rows, `${c.where} (seed ${seed})`).toEqual(await oracle(t, c.model));
        expect(explain.skippedByBucket, c.where).toBeGreaterThan(0);
        expect(explain.liveFiles - explain.skippedByPartition - explain.skippedByBucket, c.where).toBeLessThanOrEqual(
          c.maxBuckets * 4,
        );
      }
    }
    // A predicate that leaves one bucket-key column free reads every bucket.
    const { explain } = await readWhere(t, `id = ${keys[0].id} AND name = '${keys[0].name}'`);
    expect(explain.skippedByBucket).toBe(0);
  });

  it('a point read reads only the files of the bucket its key hashes to', async () => {
    const t = await new FolderCatalog(new MemoryStore()).createTable('db.p', {
      fields: parseSchemaText('id INT NOT NULL, v STRING'),
      primaryKeys: ['id'],
      options: { bucket: '8' },
    });
    for (let w = 0; w < 3; w++) await t.write(Array.from({ length: 400 }, (_, i) => ({ id: i, v: `w${w}` })));
    const live = await readLiveFiles(t.store, t.path, (await t.snapshots.latest())!);
    const bucket = bucketOf([t.schema.fields[0].type], [123], 8);
    const { rows, explain } = await readWhere(t, 'id = 123');
    expect(rows).toEqual([show({ id: 123, v: 'w2' })]);
    expect(explain.skippedByBucket).toBe(live.filter((e) => e.bucket !== bucket).length);
    expect(explain.filesRead + explain.skippedByKeyRange).toBe(live.filter((e) => e.bucket === bucket).length);
    expect(explain.filesRead).toBeGreaterThan(0);
  });
});

function eq(x: Record<string, unknown>, k: { id: number; price: string; name: string }): boolean {
  return x.id === BigInt(k.id) && Number(x.price) === Number(k.price) && x.name === k.name;
}
