/**
 * What `varve write` and `varve delete` read from: a file (Parquet through a file-backed Blob,
 * read range by range; text formats as a byte stream) or stdin, and a progress bar on stderr when
 * stderr is a terminal (rows, bytes, rate).
 */
import { createReadStream, openAsBlob } from 'node:fs';
import { stat } from 'node:fs/promises';
import { SingleBar } from 'cli-progress';
import type { InputFormat, RecordInput } from '../table/input.js';

/** The input and, for a file, its size. */
export async function openInput(file: string | undefined, format: InputFormat): Promise<{ input: RecordInput; size?: number }> {
  if (!file || file === '-') return { input: process.stdin as AsyncIterable<Uint8Array> };
  const { size } = await stat(file);
  if (format === 'parquet') return { input: await openAsBlob(file), size };
  return { input: createReadStream(file, { highWaterMark: 1 << 20 }) as AsyncIterable<Uint8Array>, size };
}

/** Progress of a large write; a no-op unless stderr is a terminal. */
export interface WriteProgress {
  update(rows: number, bytes: number): void;
  stop(): void;
}

/** A progress bar on stderr (bytes of `size` when known, rows and rows/s), or nothing when stderr is not a TTY. */
export function writeProgress(size: number | undefined): WriteProgress {
  if (!process.stderr.isTTY) return { update() {}, stop() {} };
  const started = Date.now();
  const bar = new SingleBar(
    {
      stream: process.stderr,
      format: size ? ' {bar} {percentage}% | {mb}/{totalMb} MB | {rows} rows | {rate} rows/s' : ' {mb} MB | {rows} rows | {rate} rows/s',
      hideCursor: true,
      clearOnComplete: true,
      etaBuffer: 50,
    },
  );
  const mb = (b: number) => (b / 1e6).toFixed(1);
  bar.start(size ?? 1, 0, { mb: '0.0', totalMb: size ? mb(size) : '?', rows: 0, rate: 0 });
  return {
    update(rows, bytes) {
      const seconds = Math.max(1e-3, (Date.now() - started) / 1000);
      bar.update(size ? Math.min(bytes, size) : 0, { mb: mb(bytes), rows, rate: Math.round(rows / seconds) });
    },
    stop() {
      bar.stop();
    },
  };
}
