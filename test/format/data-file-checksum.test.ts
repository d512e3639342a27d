/**
 * End-to-end checksums of data files (data-file-checksum.ts): every writer seals its files with a
 * CRC per column chunk in the footer and a footer and file CRC for the manifest; a streamed file
 * gets the same bytes and checksums as one written whole; every ranged read checks what it
 * fetched before decoding, so a damaged byte anywhere a read decodes fails it, naming the file.
 */
import { crc32 } from 'node:zlib';
import type * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { DataFileChecksumError } from '../../lib/errors.js';
import { rowsToTable, tableToRows } from '../../lib/format/columns.js';
import { combineChecksums, dataFileChecksums, type DataFileCheck } from '../../lib/format/data-file-checksum.js';
import {
  openDataFileRanged,
  readDataFileRanged,
  readDataFileRowGroups,
  writeDataFile,
  type WriteDataFileOptions,
} from '../../lib/format/data-file.js';
import { DataFileStreamWriter } from '../../lib/format/data-file-stream.js';
import { readParquetFooter } from '../../lib/format/row-group-reader.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { Row } from '../../lib/schema/types.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { allTypeFields, randomRows } from './fixtures.js';

const FIELDS = allTypeFields();

function physical(rows: Row[]): arrow.Table {
  return rowsToTable(FIELDS, rows, { sequence: rows.map((_, i) => i), kind: rows.map(() => 0) });
}

function randomBytes(r: Rng, n: number): Uint8Array {
  return Uint8Array.from({ length: n }, () => r.int(0, 255));
}

/** Every byte range a reader decodes: each column chunk, and the footer with its length and magic. */
async function decodedRanges(bytes: Uint8Array): Promise<Array<[number, number]>> {
  const footer = await readParquetFooter({ size: bytes.length, name: 'f', read: async (s, e) => bytes.subarray(s, e) });
  const out: Array<[number, number]> = footer.chunks.flat().map((c) => [c.start, c.start + c.length]);
  const len = new DataView(bytes.buffer, bytes.byteOffset + bytes.length - 8, 4).getUint32(0, true);
  out.push([bytes.length - 8 - len, bytes.length]);
  return out;
}

describe('data file checksums', () => {
  it('combines CRCs as the CRC of the concatenation (randomized lengths, 0 included)', () => {
    const r = rng(testSeed('checksum combine'));
    for (let i = 0; i < 200; i++) {
      const a = randomBytes(r, r.int(0, 300));
      const b = randomBytes(r, r.pick([0, 1, 7, r.int(0, 5000)]));
      const ab = new Uint8Array(a.length + b.length);
      ab.set(a);
      ab.set(b, a.length);
      expect(combineChecksums(crc32(a), crc32(b), b.length)).toBe(crc32(ab));
    }
  });

  it('a streamed file has the bytes and checksums of the same file written whole, and both read back (randomized)', async () => {
    const seed = testSeed('checksum stream');
    const r = rng(seed);
    for (let round = 0; round < 4; round++) {
      const t = physical(randomRows(r, FIELDS, r.int(1, 5000)));
      const opts: WriteDataFileOptions = {
        compression: r.pick(['zstd', 'lz4', 'snappy', 'uncompressed'] as const),
        rowGroupSize: r.int(50, 3000),
      };
      const what = `round ${round}, ${t.numRows} rows, ${JSON.stringify(opts)}, seed ${seed}`;
      // Act: written whole, and streamed to a sink in the encoder's pieces.
      const w = await DataFileStreamWriter.open(t.schema, opts);
      await w.add(t);
      const whole = await w.finish();
      const parts: Uint8Array[] = [];
      const s = await DataFileStreamWriter.open(t.schema, opts, async (b) => void parts.push(b.slice()));
      await s.add(t);
      const size = await s.end();
      const streamed = Buffer.concat(parts);
      // Assess
      expect(streamed.length, what).toBe(size);
      expect(Buffer.from(whole).equals(streamed), what).toBe(true);
      expect(w.checksums, what).toEqual(dataFileChecksums(whole));
      expect(s.checksums, what).toEqual(dataFileChecksums(whole));
      const store = new MemoryStore();
      await store.put('f.parquet', whole);
      const back = await readDataFileRanged(store, 'f.parquet', whole.length, {
        check: { footerCrc32: s.checksums!.footerCrc32 },
      });
      expect(tableToRows(back, FIELDS), what).toEqual(tableToRows(t, FIELDS));
    }
  });

  it('writeDataFile and sealDataFile record a CRC per column chunk that matches its bytes', async () => {
    const r = rng(testSeed('checksum chunks'));
    const bytes = writeDataFile(physical(randomRows(r, FIELDS, 2000)), { compression: 'zstd', rowGroupSize: 700 });
    const footer = await readParquetFooter({
      size: bytes.length,
      name: 'f',
      read: async (s, e) => bytes.subarray(s, e),
    });
    expect(footer.chunkCrcs?.length).toBe(3);
    footer.chunks.forEach((g, gi) =>
      g.forEach((c, ci) => expect(footer.chunkCrcs![gi][ci]).toBe(crc32(bytes.subarray(c.start, c.start + c.length)))),
    );
  });

  it('one damaged byte anywhere a read decodes fails every ranged read path before decoding, naming the file and table (randomized)', async () => {
    const seed = testSeed('checksum damage');
    const r = rng(seed);
    const t = physical(randomRows(r, FIELDS, 3000));
    const bytes = writeDataFile(t, { compression: r.pick(['zstd', 'snappy'] as const), rowGroupSize: 1000 });
    const { footerCrc32 } = dataFileChecksums(bytes);
    const ranges = await decodedRanges(bytes);
    const check: DataFileCheck = { footerCrc32, table: 'db.t' };
    for (let i = 0; i < 30; i++) {
      const [s, e] = r.pick(ranges);
      const at = r.int(s, e - 1);
      const damaged = bytes.slice();
      damaged[at] ^= 1 << r.int(0, 7);
      const store = new MemoryStore();
      await store.put('db/t/bucket-0/data-x.parquet', damaged);
      const what = `byte ${at} of [${s}, ${e}), seed ${seed}`;
      const paths: Array<[string, () => Promise<unknown>]> = [
        [
          'whole ranged read',
          () => readDataFileRanged(store, 'db/t/bucket-0/data-x.parquet', damaged.length, { check }),
        ],
        [
          'row groups',
          async () => {
            for await (const _ of readDataFileRowGroups(store, 'db/t/bucket-0/data-x.parquet', damaged.length, {
              check,
            }));
          },
        ],
        [
          'decoder',
          async () =>
            (await openDataFileRanged(store, 'db/t/bucket-0/data-x.parquet', damaged.length, check)).readRowGroups(
              t.schema.names as string[],
            ),
        ],
      ];
      for (const [name, read] of paths) {
        const err = await read().then(
          () => undefined,
          (x: unknown) => x,
        );
        expect(err, `${name}: ${what}`).toBeInstanceOf(DataFileChecksumError);
        expect((err as Error).message).toContain('db/t/bucket-0/data-x.parquet');
        expect((err as Error).message).toContain('db.t');
      }
    }
  });

  it('a file without checksums (written before them) reads as before', async () => {
    const r = rng(testSeed('checksum unchecked'));
    const t = physical(randomRows(r, FIELDS, 500));
    const w = await DataFileStreamWriter.open(t.schema, { compression: 'zstd' }, undefined, false);
    await w.add(t);
    const bytes = await w.finish();
    const store = new MemoryStore();
    await store.put('f.parquet', bytes);
    const footer = await readParquetFooter({
      size: bytes.length,
      name: 'f',
      read: async (s, e) => bytes.subarray(s, e),
    });
    expect(footer.chunkCrcs).toBeUndefined();
    expect(tableToRows(await readDataFileRanged(store, 'f.parquet', bytes.length), FIELDS)).toEqual(
      tableToRows(t, FIELDS),
    );
  });
});
