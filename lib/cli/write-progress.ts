/**
 * The progress bar of `varve write` and `varve delete`: on stderr when stderr is a terminal (rows,
 * bytes, rate). What they read from is lib/table/write-job.ts's business.
 */
import { SingleBar } from 'cli-progress';
import type { WriteJobProgress } from '../table/write-job.js';

/** A progress bar on stderr (bytes of `size` when known, rows and rows/s), or nothing when stderr is not a TTY. */
export function writeProgress(size: number | undefined): WriteJobProgress {
  if (!process.stderr.isTTY) return { update() {}, stop() {} };
  const started = Date.now();
  const bar = new SingleBar({
    stream: process.stderr,
    format: size
      ? ' {bar} {percentage}% | {mb}/{totalMb} MB | {rows} rows | {rate} rows/s'
      : ' {mb} MB | {rows} rows | {rate} rows/s',
    hideCursor: true,
    clearOnComplete: true,
    etaBuffer: 50,
  });
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
