/**
 * spliceParquetFiles: a file's row groups encoded as separate one-row-group files (the encoder
 * pool's pieces) and spliced are the file the writer makes in one go: pages and page index byte
 * for byte, and the same footer — row group offsets, ordinals, page locations, statistics and
 * key-value metadata (whose order parquet-rs varies per file).
 */
import type * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { CorruptMetadataError } from '../../lib/errors.js';
import { rowsToTable, tableToRows } from '../../lib/format/columns.js';
import { sealDataFile } from '../../lib/format/data-file-checksum.js';
import { DataFileStreamWriter } from '../../lib/format/data-file-stream.js';
import { readDataFile, readDataFileRanged, type WriteDataFileOptions } from '../../lib/format/data-file.js';
import { spliceParquetFiles } from '../../lib/format/parquet-splice.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { Row } from '../../lib/schema/types.js';
import { dataPart, footerOf } from '../helpers/parquet-bytes.js';
import { rng, testSeed } from '../helpers/random.js';
import { allTypeFields, edgeRows, randomRows } from './fixtures.js';

const FIELDS = allTypeFields();

function physical(rows: Row[]): arrow.Table {
  return rowsToTable(FIELDS, rows, { sequence: rows.map((_, i) => i), kind: rows.map((_, i) => i % 4) });
}

/** A file as the inline writer makes it (sealed: with its chunk checksums), or a piece as a pool worker does (unsealed). */
async function encode(t: arrow.Table, opts: WriteDataFileOptions, sealed = true): Promise<Uint8Array> {
  const w = await DataFileStreamWriter.open(t.schema, opts, undefined, sealed);
  await w.add(t);
  return w.finish();
}

describe('spliceParquetFiles', () => {
  it('splices one-row-group files into the file the writer makes whole, byte for byte, for random tables of every type', async () => {
    const seed = testSeed('parquet splice');
    const r = rng(seed);
    for (let round = 0; round < 6; round++) {
      // Prepare: a random table (under one 65,536-row add slice, so both encodes see the same batches).
      const rows = round === 0 ? [...edgeRows(), ...randomRows(r, FIELDS, 500)] : randomRows(r, FIELDS, r.int(1, 6000));
      const t = physical(rows);
      const rowGroupSize = r.int(1, 2500);
      const opts: WriteDataFileOptions = {
        compression: r.pick(['zstd', 'lz4'] as const),
        metadata: { 'varve.schema-id': '3', round: String(round) },
        rowGroupSize,
      };
      const what = `round ${round}: ${t.numRows} rows, row groups of ${rowGroupSize}, ${opts.compression}, seed ${seed}`;
      // Act: the whole file, and each row group as a file of its own, spliced.
      const whole = await encode(t, opts);
      const pieces: Uint8Array[] = [];
      for (let at = 0; at < t.numRows; at += rowGroupSize)
        pieces.push(await encode(t.slice(at, Math.min(t.numRows, at + rowGroupSize)), opts, false));
      // The pool seals the spliced file as the inline writer seals its own (data-file-checksum.ts).
      const spliced = sealDataFile(spliceParquetFiles(pieces)).bytes;
      // Assess: the same pages and page index byte for byte, the same footer (its key-value
      // metadata in any order), and the rows read back whole and through the footer's offsets (ranged).
      expect(Buffer.from(dataPart(spliced)).equals(Buffer.from(dataPart(whole))), what).toBe(true);
      expect(footerOf(spliced), what).toEqual(footerOf(whole));
      const store = new MemoryStore();
      await store.put('f.parquet', spliced);
      expect(tableToRows(await readDataFileRanged(store, 'f.parquet'), FIELDS), what).toEqual(tableToRows(t, FIELDS));
      expect((await readDataFile(spliced)).numRows, what).toBe(t.numRows);
    }
  });

  it('rejects what is not a Parquet file, naming the piece', () => {
    expect(() => spliceParquetFiles([new Uint8Array(20), new Uint8Array(20)])).toThrow(CorruptMetadataError);
    expect(() => spliceParquetFiles([new Uint8Array(20), new Uint8Array(20)])).toThrow(/piece 0 .* not a Parquet file/);
    expect(() => spliceParquetFiles([])).toThrow(CorruptMetadataError);
  });
});
