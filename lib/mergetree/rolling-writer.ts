/**
 * Rolls key-sorted output into files of about a target size. Parquet sizes are known only after
 * encoding, so the cut is made by rows: target bytes over the input's bytes per row (input and
 * output share schema, codec and value distribution, so the estimate holds within a few percent).
 */
import type * as arrow from 'apache-arrow';
import { concatTables, singleBatch, takeRows } from '../format/columns.js';

export class RollingFileWriter {
  private readonly rowsPerFile: number;
  private pending: arrow.Table[] = [];
  private pendingRows = 0;

  /**
   * `inputBytes` / `inputRows` describe the data being rewritten; `write` receives each file's
   * rows, in order.
   */
  constructor(
    targetFileSize: number,
    inputBytes: number,
    inputRows: number,
    private readonly write: (data: arrow.Table) => Promise<void>,
  ) {
    const bytesPerRow = inputRows > 0 && inputBytes > 0 ? inputBytes / inputRows : 1;
    this.rowsPerFile = Math.max(1, Math.floor(targetFileSize / bytesPerRow));
  }

  /** Appends rows that follow everything added before in key order; writes every file that filled up. */
  async add(rows: arrow.Table): Promise<void> {
    if (rows.numRows === 0) return;
    this.pending.push(rows);
    this.pendingRows += rows.numRows;
    if (this.pendingRows < this.rowsPerFile) return;
    const all = concatTables(this.pending, this.pending[0].schema);
    let start = 0;
    for (; start + this.rowsPerFile <= all.numRows; start += this.rowsPerFile)
      await this.write(compactCopy(all.slice(start, start + this.rowsPerFile)));
    // The tail (less than a file) waits for the next rows; it is copied when it is written.
    const rest = all.slice(start);
    this.pending = rest.numRows > 0 ? [rest] : [];
    this.pendingRows = rest.numRows;
  }

  /** Writes what is left as a last, smaller file. */
  async finish(): Promise<void> {
    if (this.pendingRows === 0) return;
    const all = concatTables(this.pending, this.pending[0].schema);
    this.pending = [];
    this.pendingRows = 0;
    await this.write(compactCopy(all));
  }
}

/**
 * The rows of a slice as fresh, zero-offset columns: each file is encoded from its own buffers,
 * and code that indexes raw buffers (statistics) need not know about Arrow slice offsets.
 */
function compactCopy(t: arrow.Table): arrow.Table {
  if (t.batches.length !== 1) return singleBatch(t);
  if (t.batches[0].data.children.every((c) => c.offset === 0)) return t;
  const rows = new Uint32Array(t.numRows);
  for (let i = 0; i < rows.length; i++) rows[i] = i;
  return takeRows(t, rows);
}

/** A data file being written a piece at a time (compaction output). */
export interface DataFileSink<M> {
  /** Appends key-sorted rows after everything added before. */
  add(rows: arrow.Table): Promise<void>;
  /** Ends the file; returns its metadata. */
  finish(): Promise<M>;
  /** Ends the file without keeping it. */
  discard(): Promise<void>;
}

/**
 * RollingFileWriter's cuts (same rows per file, same boundaries) with nothing pending: each file
 * is a sink that rows stream into, so memory holds no file's rows, only what the sink encodes.
 */
export class RollingFileSink<M> {
  private readonly rowsPerFile: number;
  private current: DataFileSink<M> | null = null;
  private inFile = 0;

  constructor(
    targetFileSize: number,
    inputBytes: number,
    inputRows: number,
    private readonly open: () => Promise<DataFileSink<M>>,
    private readonly done: (meta: M) => void,
  ) {
    const bytesPerRow = inputRows > 0 && inputBytes > 0 ? inputBytes / inputRows : 1;
    this.rowsPerFile = Math.max(1, Math.floor(targetFileSize / bytesPerRow));
  }

  /** Appends rows that follow everything added before in key order; ends every file that filled up. */
  async add(rows: arrow.Table): Promise<void> {
    for (let at = 0; at < rows.numRows; ) {
      if (this.current === null) {
        this.current = await this.open();
        this.inFile = 0;
      }
      const take = Math.min(this.rowsPerFile - this.inFile, rows.numRows - at);
      await this.current.add(rows.slice(at, at + take));
      this.inFile += take;
      at += take;
      if (this.inFile === this.rowsPerFile) await this.endFile();
    }
  }

  /** Ends the last, smaller file. */
  async finish(): Promise<void> {
    if (this.current !== null) await this.endFile();
  }

  /** Drops the file being written (the task failed). */
  async discard(): Promise<void> {
    const c = this.current;
    this.current = null;
    await c?.discard();
  }

  private async endFile(): Promise<void> {
    const c = this.current!;
    this.current = null;
    this.done(await c.finish());
  }
}
