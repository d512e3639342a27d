/**
 * Temporary files of a spilling write buffer: sorted runs as Arrow IPC files in a private folder
 * under the OS temp directory. Every folder is registered until cleared, and whatever is left
 * when the process exits is removed then, so a crashed flush does not leak disk.
 */
import { closeSync, createReadStream, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';

/** Rows per batch of a spilled run: the unit its merge reads back. */
export const SPILL_BATCH_ROWS = 16_384;

const live = new Set<string>();
let exitHookInstalled = false;

function removeAllOnExit(): void {
  for (const dir of live) rmSync(dir, { recursive: true, force: true });
  live.clear();
}

/** A run being written to disk piece by piece. */
export interface SpillRunWriter {
  /** Appends rows after those appended before. */
  append(table: arrow.Table): void;
  /** Closes the file; returns its run number for `chunks`. */
  end(): number;
  /** Closes and deletes the file (a pass that failed). */
  abandon(): void;
}

/** A folder of spilled runs, created on first use. */
export class SpillDirectory {
  private dir: string | null = null;
  private readonly files: string[] = [];
  private bytes = 0;
  private pendingRuns = 0;

  constructor(private readonly root: string = tmpdir()) {}

  /** Number of runs on disk. */
  get runCount(): number {
    return this.files.length;
  }

  /** Bytes on disk. */
  get diskBytes(): number {
    return this.bytes;
  }

  /**
   * Starts a run written piece by piece (a write buffer's spill, a merge pass streaming out): each
   * batch of at most SPILL_BATCH_ROWS rows is serialized and written on its own, so a run never
   * holds more than a batch's bytes; `end` makes it readable, `abandon` (or a failed append)
   * deletes the file. A run is the only way to spill: there is no whole-table write.
   */
  openRun(): SpillRunWriter {
    const dir = this.folder();
    const path = join(dir, `run-${this.files.length}-${this.pendingRuns++}.arrow`);
    const fd = openSync(path, 'w');
    let open = true;
    const close = () => {
      if (open) closeSync(fd);
      open = false;
    };
    return {
      append: (table: arrow.Table) => {
        try {
          for (let at = 0; at < table.numRows; at += SPILL_BATCH_ROWS) {
            const bytes = arrow.tableToIPC(table.slice(at, at + SPILL_BATCH_ROWS), 'stream');
            writeSync(fd, bytes);
            this.bytes += bytes.byteLength;
          }
        } catch (e) {
          close();
          rmSync(path, { force: true });
          throw e;
        }
      },
      end: () => {
        close();
        this.files.push(path);
        return this.files.length - 1;
      },
      abandon: () => {
        close();
        rmSync(path, { force: true });
      },
    };
  }

  /** Reads run `n` back whole, as one table of one batch per piece written. */
  read(n: number): arrow.Table {
    const batches: arrow.RecordBatch[] = [];
    // A run written by `openRun` is several IPC streams end to end.
    for (const reader of arrow.RecordBatchReader.readAll(readFileSync(this.files[n])))
      for (const b of reader) batches.push(b);
    return new arrow.Table(batches);
  }

  /** Reads run `n` back a batch at a time (one table per batch), streaming from disk. */
  async *chunks(n: number): AsyncGenerator<arrow.Table> {
    // A run written by `openRun` is several IPC streams end to end; readAll reads each in turn.
    for await (const reader of arrow.RecordBatchReader.readAll(
      createReadStream(this.files[n], { highWaterMark: 1 << 20 }),
    )) {
      for await (const batch of reader) yield new arrow.Table(batch.schema, [batch]);
    }
  }

  /** Deletes every run and the folder. */
  clear(): void {
    if (this.dir !== null) {
      rmSync(this.dir, { recursive: true, force: true });
      live.delete(this.dir);
    }
    this.dir = null;
    this.files.length = 0;
    this.bytes = 0;
  }

  private folder(): string {
    if (this.dir === null) {
      this.dir = mkdtempSync(join(this.root, 'varve-spill-'));
      live.add(this.dir);
      if (!exitHookInstalled) {
        process.once('exit', removeAllOnExit);
        exitHookInstalled = true;
      }
    }
    return this.dir;
  }
}
