/** Comparing Parquet files made by different parquet-wasm instances (the encoder pool's identity tests). */
import { parquetMetadata } from 'hyparquet';

/** A Parquet file's bytes before its footer: every page and the page index, byte for byte. */
export function dataPart(b: Uint8Array): Uint8Array {
  const footer = new DataView(b.buffer, b.byteOffset + b.byteLength - 8, 4).getUint32(0, true);
  return b.subarray(0, b.byteLength - 8 - footer);
}

/**
 * A file's footer with its key-value metadata as a sorted list: parquet-rs keeps the metadata in
 * a hash map seeded per map, so its order differs between any two files written (even by one
 * wasm instance) — the one byte difference a reader cannot see.
 */
export function footerOf(b: Uint8Array): unknown {
  const md = parquetMetadata(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer);
  return {
    ...md,
    key_value_metadata: [...(md.key_value_metadata ?? [])].sort((x, y) => (x.key < y.key ? -1 : 1)),
    metadata_length: undefined,
  };
}
