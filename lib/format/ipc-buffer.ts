/**
 * Arrow IPC stream bytes written into a buffer the caller reuses. `arrow.tableToIPC` joins its
 * pieces into a fresh buffer per call; the encoder makes one per 65,536-row slice (several MB),
 * used once and dropped, and that churn of short-lived multi-MB allocations fragments the malloc
 * heap (measured ≈ 30 MB of a large write's peak RSS). Here the writer's pieces (message headers
 * and views of the column buffers) are collected and copied once into a buffer that lives on.
 */
import * as arrow from 'apache-arrow';

/** A stream writer that keeps the pieces it writes instead of queueing them for a join. */
class PieceWriter extends arrow.RecordBatchStreamWriter {
  readonly pieces: Uint8Array[] = [];
  size = 0;

  protected override _write(chunk: unknown): this {
    if (this._started && ArrayBuffer.isView(chunk) && chunk.byteLength > 0) {
      this.pieces.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      this.size += chunk.byteLength;
      this._position += chunk.byteLength;
    }
    return this;
  }
}

/** Capacity a buffer is rounded up to, so sizes that vary a little from slice to slice reuse one buffer. */
const GRAIN = 1 << 20;

/**
 * The IPC stream of `table` (what `arrow.tableToIPC(table, 'stream')` returns, byte for byte) in
 * `buffer` when it is large enough, else in a new one; returns the bytes (a view from offset 0
 * of the buffer used — pass `bytes.buffer` back next time).
 */
export function tableIPCInto(table: arrow.Table, buffer?: ArrayBuffer): Uint8Array {
  const w = new PieceWriter();
  w.writeAll(table);
  const target =
    buffer !== undefined && buffer.byteLength >= w.size
      ? buffer
      : new ArrayBuffer(Math.ceil(Math.max(w.size, 1) / GRAIN) * GRAIN);
  const out = new Uint8Array(target, 0, w.size);
  let at = 0;
  for (const p of w.pieces) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}
