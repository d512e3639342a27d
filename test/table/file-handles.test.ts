/**
 * Readers of data files in a local folder hold one file handle per file (ObjectStore.openRanges)
 * and must release it however the read ends: completed, stopped early by the consumer (break,
 * a throw), failed by the store (injected errors on open and on reads) or by bad input. Random
 * reads of every kind, at the data-file level and through the table (merged read, scan,
 * compaction); after each one no file under the warehouse is still open (/proc/self/fd), and
 * every read that completed returned the model's rows.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { InvalidArgumentError, SchemaMismatchError, StoreUnavailableError } from '../../lib/errors.js';
import {
  openDataFileRanged,
  readDataFileRanged,
  readDataFileRowGroups,
  writeDataFile,
} from '../../lib/format/data-file.js';
import { rowsToTable } from '../../lib/format/columns.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { RowKind, type Row } from '../../lib/schema/types.js';
import { LocalStore } from '../../lib/store/local-store.js';
import type {
  ListOptions,
  ObjectInfo,
  ObjectStore,
  ObjectUpload,
  RangeReader,
  StoredObject,
} from '../../lib/store/object-store.js';
import { openFilesUnder } from '../helpers/open-files.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';

const scratch = mkdtempSync(join(tmpdir(), 'varve-file-handles-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A LocalStore whose ranged reads (open, each read, getRange) fail at random while `failRate` > 0. */
class FaultyLocal implements ObjectStore {
  failRate = 0;
  injected = 0;

  constructor(
    readonly inner: LocalStore,
    private readonly r: Rng,
  ) {}

  get uri(): string {
    return this.inner.uri;
  }

  private maybeFail(what: string, key: string): void {
    if (this.failRate > 0 && this.r.chance(this.failRate)) {
      this.injected++;
      throw new StoreUnavailableError(`injected ${what} failure of ${key}`);
    }
  }

  async openRanges(key: string): Promise<RangeReader> {
    this.maybeFail('open', key);
    const reader = await this.inner.openRanges(key);
    return {
      size: reader.size,
      read: async (start, end) => {
        this.maybeFail('read', key);
        return reader.read(start, end);
      },
      close: () => reader.close(),
    };
  }

  async getRange(key: string, start: number, end: number): Promise<Uint8Array> {
    this.maybeFail('getRange', key);
    return this.inner.getRange(key, start, end);
  }

  get(key: string): Promise<StoredObject> {
    return this.inner.get(key);
  }
  head(key: string): Promise<(ObjectInfo & { etag: string }) | undefined> {
    return this.inner.head(key);
  }
  put(key: string, body: Uint8Array): Promise<{ etag: string }> {
    return this.inner.put(key, body);
  }
  putIfAbsent(key: string, body: Uint8Array): Promise<{ etag: string } | undefined> {
    return this.inner.putIfAbsent(key, body);
  }
  putIfMatch(key: string, body: Uint8Array, etag: string): Promise<{ etag: string } | undefined> {
    return this.inner.putIfMatch(key, body, etag);
  }
  deleteIfMatch(key: string, etag: string): Promise<boolean> {
    return this.inner.deleteIfMatch(key, etag);
  }
  list(prefix: string, opts?: ListOptions): AsyncIterable<ObjectInfo> {
    return this.inner.list(prefix, opts);
  }
  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }
  upload(key: string): ObjectUpload {
    return this.inner.upload(key);
  }
}

/** The columns of the data files of the first test. */
const FILE_FIELDS = parseSchemaText('id INT NOT NULL, v STRING');

/** Runs `op`; an injected store failure, or the error `expected` names, ends it as a failure. */
async function attempt(store: FaultyLocal, op: () => Promise<void>, expected?: new (...a: never[]) => Error) {
  try {
    await op();
    return 'done';
  } catch (e) {
    const ok =
      (e instanceof StoreUnavailableError && /injected/.test(e.message)) ||
      (expected !== undefined && e instanceof expected);
    if (!ok) throw e;
    return store.injected > 0 ? 'failed' : 'refused';
  }
}

/** The column `id` of every batch, concatenated. */
function ids(tables: arrow.Table[]): number[] {
  return tables.flatMap((t) => Array.from(t.getChild('id')!.toArray() as Int32Array));
}

describe('file handles of ranged reads of a local folder', () => {
  it('are all closed after data-file reads that finish, stop early or fail (randomized)', async () => {
    const seed = testSeed('file-handles-data-files');
    const r = rng(seed);
    const root = join(scratch, 'files');
    const store = new FaultyLocal(new LocalStore(root), r);
    const files: { key: string; rows: number; size: number }[] = [];
    for (let f = 0; f < 4; f++) {
      const rows = r.int(1, 4000);
      const groupRows = r.int(50, 1500);
      const data = Array.from({ length: rows }, (_, i): Row => ({ id: i, v: `f${f}-${i}` }));
      const t = rowsToTable(FILE_FIELDS, data, { sequence: data.map((_, i) => i), kind: data.map(() => 0) });
      const key = `db.db/t/bucket-0/data-${f}.parquet`;
      const bytes = writeDataFile(t, { compression: 'zstd', rowGroupSize: groupRows });
      await store.put(key, bytes);
      files.push({ key, rows, size: bytes.length });
    }
    const outcomes = new Map<string, number>();
    for (let round = 0; round < 80; round++) {
      const file = r.pick(files);
      const kind = r.pick(['stop', 'throw', 'decoder', 'whole', 'complete'] as const);
      store.failRate = r.chance(0.4) ? 0.15 : 0;
      store.injected = 0;
      const what = `round ${round} ${kind} ${file.key} (seed ${seed})`;
      const outcome = await attempt(
        store,
        async () => {
          if (kind === 'stop' || kind === 'throw' || kind === 'complete') {
            const stopAt = kind === 'complete' ? Number.POSITIVE_INFINITY : r.int(0, 3);
            const seen: arrow.Table[] = [];
            for await (const t of readDataFileRowGroups(store, file.key, r.chance(0.5) ? file.size : undefined)) {
              if (seen.length === stopAt) {
                if (kind === 'throw') throw new InvalidArgumentError('consumer gave up');
                break;
              }
              seen.push(t);
            }
            const got = ids(seen);
            expect(got, what).toEqual(Array.from({ length: got.length }, (_, i) => i));
            if (kind === 'complete') expect(got.length, what).toBe(file.rows);
          } else if (kind === 'decoder') {
            const decoder = await openDataFileRanged(store, file.key, r.chance(0.5) ? file.size : undefined);
            try {
              const groups = decoder.rowGroupRows.map((_, g) => g).filter(() => r.chance(0.5));
              // Now and then a row group that does not exist: the decoder refuses, and is still freed.
              if (r.chance(0.2)) groups.push(decoder.rowGroupRows.length);
              const parts = await decoder.readRowGroups(['id'], groups);
              expect(
                parts.map((p) => p.numRows),
                what,
              ).toEqual(groups.map((g) => decoder.rowGroupRows[g]));
            } finally {
              await decoder.free();
            }
          } else {
            const columns = r.chance(0.2) ? ['id', 'missing'] : ['v', 'id'];
            const t = await readDataFileRanged(store, file.key, r.chance(0.5) ? file.size : undefined, { columns });
            expect(ids([t]), what).toEqual(Array.from({ length: file.rows }, (_, i) => i));
          }
        },
        kind === 'throw' || kind === 'decoder' ? InvalidArgumentError : SchemaMismatchError,
      );
      outcomes.set(`${kind} ${outcome}`, (outcomes.get(`${kind} ${outcome}`) ?? 0) + 1);
      expect(openFilesUnder(root), `${what}: ${outcome}, then no file is left open`).toEqual([]);
    }
    console.log(`[file-handles-data-files] ${JSON.stringify(Object.fromEntries([...outcomes].sort()))}`);
  });

  it('are all closed after merged reads, scans and compactions that finish, stop early or fail (randomized)', async () => {
    const seed = testSeed('file-handles-table');
    const r = rng(seed);
    const root = join(scratch, 'table');
    const store = new FaultyLocal(new LocalStore(root), r);
    const table = await new FolderCatalog(store).createTable('db.t', {
      fields: parseSchemaText('k INT NOT NULL, v STRING'),
      primaryKeys: ['k'],
      options: { bucket: '2', 'write-only': 'true' },
    });
    const model = new Map<number, string>();
    const keys = r.int(200, 3000);
    const outcomes = new Map<string, number>();
    for (let round = 0; round < 40; round++) {
      store.failRate = 0;
      if (round % 4 === 0) {
        // A commit of upserts and deletes: every bucket gets one more sorted run.
        const rows: Row[] = [];
        const kinds: number[] = [];
        const seen = new Set<number>();
        for (let i = r.int(1, keys); i > 0; i--) {
          const k = r.int(1, keys);
          if (seen.has(k)) continue;
          seen.add(k);
          const del = model.size > 0 && r.chance(0.1);
          rows.push({ k, v: `${round}-${k}` });
          kinds.push(del ? RowKind.DELETE : RowKind.INSERT);
          if (del) model.delete(k);
          else model.set(k, `${round}-${k}`);
        }
        await table.write(rows, { kinds });
      }
      const latest = await table.latest();
      const expected = [...model.entries()].sort((a, b) => a[0] - b[0]).map(([k, v]) => ({ k, v }));
      const kind = r.pick(['read', 'scan-stop', 'scan', 'compact'] as const);
      store.failRate = r.chance(0.5) ? r.pick([0.02, 0.1]) : 0;
      store.injected = 0;
      const what = `round ${round} ${kind} (seed ${seed})`;
      const outcome = await attempt(store, async () => {
        if (kind === 'read') {
          const t = await latest.read();
          expect(rowsOf(t), what).toEqual(expected);
        } else if (kind === 'scan' || kind === 'scan-stop') {
          const stopAt = kind === 'scan' ? Number.POSITIVE_INFINITY : r.int(0, 2);
          const batches: arrow.RecordBatch[] = [];
          for await (const b of latest.scan({ batchRows: r.int(50, 500) })) {
            if (batches.length === stopAt) break;
            batches.push(b);
          }
          if (kind === 'scan') expect(rowsOf(new arrow.Table(batches)), what).toEqual(expected);
        } else {
          await compactTable(latest, { full: r.chance(0.5) });
        }
      });
      outcomes.set(`${kind} ${outcome}`, (outcomes.get(`${kind} ${outcome}`) ?? 0) + 1);
      expect(openFilesUnder(root), `${what}: ${outcome}, then no file is left open`).toEqual([]);
    }
    // Whatever failed, nothing committed was lost.
    store.failRate = 0;
    expect(rowsOf(await (await table.latest()).read()), `final read (seed ${seed})`).toEqual(
      [...model.entries()].sort((a, b) => a[0] - b[0]).map(([k, v]) => ({ k, v })),
    );
    console.log(`[file-handles-table] ${JSON.stringify(Object.fromEntries([...outcomes].sort()))}`);
  });
});

/** The rows of a read as { k, v } in key order (a read returns them bucket by bucket). */
function rowsOf(t: arrow.Table): { k: number; v: string }[] {
  return t
    .toArray()
    .map((x) => ({ k: x.k as number, v: x.v as string }))
    .sort((a, b) => a.k - b.k);
}
