/**
 * A spilled write buffer flushes in bounded memory: flushPieces merges the spilled runs batch by
 * batch and yields, in key order, exactly what the whole-buffer flush gives (data and raw
 * changelog). And the table writer keeps all its buckets together under write-buffer-size.
 */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { WriteBuffer } from '../../lib/mergetree/write-buffer.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { rng, testSeed } from '../helpers/random.js';
import { recordsOf, type Rec } from './fixtures.js';
import { LAYOUTS, SCENARIOS, randomRow } from './random-data.js';

describe('WriteBuffer.flushPieces', () => {
  it('equals flush() on a spilled buffer, data and raw changelog, for every engine (randomized)', async () => {
    const seed = testSeed('write-buffer pieces');
    const r = rng(seed);
    for (const [layoutName, layout] of Object.entries(LAYOUTS)) {
      for (const scenario of SCENARIOS) {
        const firstRowRetracts = scenario.config.engine === 'first-row' && !scenario.config.ignoreDelete;
        const recs: Rec[] = [];
        for (let i = r.int(100, 300); i > 0; i--)
          recs.push({
            row: randomRow(layout, r, r.int(0, 40)),
            kind: firstRowRetracts ? 0 : r.pick(scenario.kinds),
            seq: 0,
          });
        const make = () =>
          new WriteBuffer({
            schema: layout,
            merge: scenario.config,
            writeBufferSize: 600,
            spillable: true,
            keepRawChangelog: true,
          });
        const whole = make(),
          pieces = make();
        for (let at = 0; at < recs.length; at += 10) {
          for (const b of [whole, pieces])
            b.add(
              recs.slice(at, at + 10).map((x) => x.row),
              recs.slice(at, at + 10).map((x) => x.kind),
            );
        }
        const context = `${layoutName} / ${scenario.name} (seed ${seed})`;
        expect(pieces.spilledRuns, context).toBeGreaterThan(1);

        const expected = whole.flush();
        const data: Rec[] = [],
          changelog: Rec[] = [];
        for await (const p of pieces.flushPieces()) {
          data.push(...recordsOf(layout, p.data));
          changelog.push(...recordsOf(layout, p.changelog!));
        }

        expect(data, context).toEqual(recordsOf(layout, expected.data));
        expect(changelog, context).toEqual(recordsOf(layout, expected.changelog!));
        expect(pieces.size).toBe(0);
      }
    }
  });
});

describe('WriteBuffer.flushPieces, spilled runs and a large in-memory part', () => {
  it('merges the in-memory rows batch by batch (more than one batch of them) into the same result as flush()', async () => {
    const seed = testSeed('write-buffer memory run');
    const r = rng(seed);
    const layout = LAYOUTS.bigint;
    const scenario = SCENARIOS[0];
    const recs: Rec[] = [];
    for (let i = 40_000; i > 0; i--)
      recs.push({ row: randomRow(layout, r, r.int(0, 30_000)), kind: r.pick(scenario.kinds), seq: 0 });
    const make = () =>
      new WriteBuffer({
        schema: layout,
        merge: scenario.config,
        writeBufferSize: 1 << 30,
        spillable: true,
        keepRawChangelog: true,
      });
    const whole = make(),
      pieces = make();
    // One spilled run of the first 5,000 rows; the other 35,000 (more than one 16,384-row batch) stay in memory.
    for (const b of [whole, pieces]) {
      b.add(
        recs.slice(0, 5_000).map((x) => x.row),
        recs.slice(0, 5_000).map((x) => x.kind),
      );
      expect(b.spillMemory()).toBe(true);
      b.add(
        recs.slice(5_000).map((x) => x.row),
        recs.slice(5_000).map((x) => x.kind),
      );
    }
    const expected = whole.flush();
    const data: Rec[] = [],
      changelog: Rec[] = [];
    for await (const p of pieces.flushPieces()) {
      data.push(...recordsOf(layout, p.data));
      changelog.push(...recordsOf(layout, p.changelog!));
    }
    expect(data, `seed ${seed}`).toEqual(recordsOf(layout, expected.data));
    expect(changelog, `seed ${seed}`).toEqual(recordsOf(layout, expected.changelog!));
  });
});

describe('TableWriter memory', () => {
  it('bounds all buckets together: 8 buckets each under the limit still flush early when not spillable', async () => {
    // Prepare: 8 buckets; each bucket alone stays below the 16 kb limit, all together do not.
    const catalog = new FolderCatalog(new MemoryStore());
    const table = await catalog.createTable('db.t', {
      fields: parseSchemaText('id BIGINT, v STRING'),
      primaryKeys: ['id'],
      options: { bucket: '8', 'write-only': 'true', 'write-buffer-size': '16 kb', 'write-buffer-spillable': 'false' },
    });
    const rows = Array.from({ length: 2000 }, (_, i) => ({ id: BigInt(i), v: `value-${i}` }));

    // Act
    const result = await table.write(rows);

    // Assess: more files than buckets (early flushes), every row readable once.
    const files = await readLiveFiles(table.store, table.path, result.snapshot!);
    expect(files.length).toBeGreaterThan(8);
    expect((await table.read()).numRows).toBe(2000);
  });
});

describe('WriteBuffer in memory, several tables', () => {
  it('sorts and merges its tables without joining them, and yields the result in pieces (randomized, every engine)', async () => {
    const seed = testSeed('write-buffer tables');
    const r = rng(seed);
    for (const [layoutName, layout] of Object.entries(LAYOUTS)) {
      for (const scenario of SCENARIOS) {
        // Prepare: adds of 40 rows, each kept as its own table (coalesceRows 30): many sources.
        const firstRowRetracts = scenario.config.engine === 'first-row' && !scenario.config.ignoreDelete;
        const recs: Rec[] = [];
        for (let i = r.int(200, 400); i > 0; i--)
          recs.push({
            row: randomRow(layout, r, r.int(0, 150)),
            kind: firstRowRetracts ? 0 : r.pick(scenario.kinds),
            seq: 0,
          });
        const whole = new WriteBuffer({
          schema: layout,
          merge: scenario.config,
          writeBufferSize: 1 << 30,
          spillable: false,
          keepRawChangelog: true,
          coalesceRows: 1 << 20,
        });
        const tables = new WriteBuffer({
          schema: layout,
          merge: scenario.config,
          writeBufferSize: 1 << 30,
          spillable: false,
          keepRawChangelog: true,
          coalesceRows: 30,
          pieceRows: 25,
        });
        for (let at = 0; at < recs.length; at += 40) {
          for (const b of [whole, tables])
            b.add(
              recs.slice(at, at + 40).map((x) => x.row),
              recs.slice(at, at + 40).map((x) => x.kind),
            );
        }
        const context = `${layoutName} / ${scenario.name} (seed ${seed})`;

        // Act
        const expected = whole.flush();
        const data: Rec[] = [],
          changelog: Rec[] = [];
        let pieces = 0;
        for await (const p of tables.flushPieces()) {
          pieces++;
          expect(p.data.numRows, context).toBeLessThanOrEqual(25);
          data.push(...recordsOf(layout, p.data));
          changelog.push(...recordsOf(layout, p.changelog!));
        }

        // Assess: the same records as one table merged whole, in pieces of at most 25 rows.
        expect(pieces, context).toBe(
          Math.max(Math.ceil(expected.data.numRows / 25), Math.ceil(expected.changelog!.numRows / 25)),
        );
        expect(data, context).toEqual(recordsOf(layout, expected.data));
        expect(changelog, context).toEqual(recordsOf(layout, expected.changelog!));
        expect(tables.size).toBe(0);
      }
    }
  });
});
