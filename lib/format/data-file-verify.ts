/**
 * Reading a data file back whole and checking it against its checksums (`varve verify`): the size
 * and file CRC its manifest entry records, its footer's CRC, and each column chunk's CRC.
 */
import { CorruptMetadataError, DataFileChecksumError } from '../errors.js';
import { checksum, crcHex } from './data-file-checksum.js';
import { readParquetFooter } from './row-group-reader.js';
/** What the manifest entry of a file says to check its bytes against (verify). */
export interface DataFileExpectation {
  fileSize?: number;
  footerCrc32?: number;
  fileCrc32?: number;
}

/** What `verifyDataFileBytes` found: intact, damaged (and how), or unchecked (written before checksums). */
export type DataFileVerdict = { status: 'ok' } | { status: 'unchecked' } | { status: 'damaged'; problem: string };

/**
 * Checks a data file's whole bytes against its manifest entry and its own footer: the size, the
 * file CRC, the footer CRC and the CRC of every column chunk. A file with none of them (written
 * before checksums) is 'unchecked' unless its size or footer is already wrong.
 */
export async function verifyDataFileBytes(
  name: string,
  bytes: Uint8Array,
  expect: DataFileExpectation,
): Promise<DataFileVerdict> {
  if (expect.fileSize !== undefined && bytes.length !== expect.fileSize) {
    return {
      status: 'damaged',
      problem: `is ${bytes.length} bytes, its manifest entry records ${expect.fileSize} (cut short or replaced)`,
    };
  }
  // The footer and every chunk against it first (the row-group reader's own checks, on bytes in hand): they say where.
  let chunked = false;
  try {
    const footer = await readParquetFooter({
      size: bytes.length,
      name,
      read: async (s, e) => bytes.subarray(s, e),
      footerCrc32: expect.footerCrc32,
    });
    const crcs = footer.chunkCrcs ?? [];
    chunked = footer.chunkCrcs !== undefined;
    for (let g = 0; g < crcs.length; g++) {
      for (let c = 0; c < crcs[g].length; c++) {
        const { column, start, length } = footer.chunks[g][c];
        const crc = checksum(bytes.subarray(start, start + length));
        if (crc !== crcs[g][c])
          return {
            status: 'damaged',
            problem: `column ${column} of row group ${g} has CRC-32 ${crcHex(crc)}, its footer records ${crcHex(crcs[g][c])}`,
          };
      }
    }
  } catch (e) {
    if (e instanceof DataFileChecksumError) return { status: 'damaged', problem: e.detail };
    if (e instanceof CorruptMetadataError) return { status: 'damaged', problem: e.message };
    throw e;
  }
  // Then the whole file: the bytes no reader decodes (the leading magic, the page indexes) too.
  if (expect.fileCrc32 !== undefined) {
    const crc = checksum(bytes);
    if (crc !== expect.fileCrc32)
      return {
        status: 'damaged',
        problem: `has CRC-32 ${crcHex(crc)}, its manifest entry records ${crcHex(expect.fileCrc32)}`,
      };
  }
  return chunked || expect.fileCrc32 !== undefined ? { status: 'ok' } : { status: 'unchecked' };
}
