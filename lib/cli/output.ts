/**
 * Renders records for people (`table`: aligned columns) and for programs (`jsonl`, `csv`).
 * Values are already display values: strings, numbers, booleans or null. Output streams: a
 * printer takes records batch by batch, so a read of any size prints as it reads.
 */
export type OutputFormat = 'table' | 'jsonl' | 'csv';

export type DisplayValue = string | number | boolean | null;

type Records = ArrayLike<Record<string, DisplayValue>>;

/**
 * Rows the table format looks at before it fixes its column widths. Later rows print in the same
 * columns; a wider cell pushes its line out rather than holding every row back (psql's streaming
 * layout does the same with FETCH_COUNT).
 */
const TABLE_SAMPLE_ROWS = 1000;

/** One string with every record rendered in the format, ending with a newline when non-empty. */
export function renderRecords(columns: string[], records: Records, format: OutputFormat): string {
  let text = '';
  const printer = new RecordPrinter(columns, format, (t) => (text += t));
  printer.add(records);
  printer.end();
  return text;
}

/** Prints records in a format as they come: `add` batches, then `end` once. */
export class RecordPrinter {
  private started = false;
  private count = 0;
  private sample: string[][] = [];
  private sampleRecords: Array<Record<string, DisplayValue>> = [];
  private widths: number[] = [];
  private numeric: boolean[] = [];

  constructor(
    private readonly columns: string[],
    private readonly format: OutputFormat,
    private readonly out: (text: string) => void,
  ) {}

  /** Prints (or, for the table format's first rows, holds) a batch of records. */
  add(records: Records): void {
    const n = records.length;
    if (n === 0) return;
    this.count += n;
    const { columns } = this;
    if (this.format === 'jsonl') {
      let text = '';
      for (let i = 0; i < n; i++) text += JSON.stringify(pick(columns, records[i])) + '\n';
      this.out(text);
      return;
    }
    if (this.format === 'csv') {
      let text = this.started ? '' : columns.map(csvCell).join(',') + '\n';
      this.started = true;
      for (let i = 0; i < n; i++) {
        const r = records[i];
        text += columns.map((c) => csvCell(r[c] ?? null)).join(',') + '\n';
      }
      this.out(text);
      return;
    }
    let from = 0;
    if (!this.started) {
      for (; from < n && this.sample.length < TABLE_SAMPLE_ROWS; from++) {
        this.sampleRecords.push(records[from]);
        this.sample.push(cellsOf(columns, records[from]));
      }
      if (this.sample.length < TABLE_SAMPLE_ROWS) return;
      this.startTable();
    }
    let text = '';
    for (let i = from; i < n; i++) text += this.line(cellsOf(columns, records[i])) + '\n';
    if (text) this.out(text);
  }

  /** Prints what is held and the closing line (the table format's row count). */
  end(): void {
    if (this.format === 'csv') {
      if (!this.started) this.out(this.columns.map(csvCell).join(',') + '\n');
      this.started = true;
      return;
    }
    if (this.format !== 'table') return;
    if (!this.started) this.startTable();
    this.out(`(${this.count} ${this.count === 1 ? 'row' : 'rows'})\n`);
  }

  /** Fixes widths and alignment from the sample, prints the header and the sample's rows. */
  private startTable(): void {
    this.started = true;
    const { columns, sample, sampleRecords } = this;
    // A loop, not Math.max(...cells): spreading a column of 100k+ cells overflows the stack.
    this.widths = columns.map((c) => displayWidth(c));
    for (const row of sample)
      for (let i = 0; i < row.length; i++) this.widths[i] = Math.max(this.widths[i], displayWidth(row[i]));
    this.numeric = columns.map(
      (c) =>
        sampleRecords.length > 0 &&
        sampleRecords.every((r) => r[c] === null || r[c] === undefined || typeof r[c] === 'number'),
    );
    let text = this.line(columns) + '\n' + this.widths.map((w) => '-'.repeat(w)).join('  ') + '\n';
    for (const row of sample) text += this.line(row) + '\n';
    this.sample = [];
    this.sampleRecords = [];
    this.out(text);
  }

  private line(row: string[]): string {
    return row
      .map((cell, i) => pad(cell, this.widths[i], this.numeric[i]))
      .join('  ')
      .trimEnd();
  }
}

function cellsOf(columns: string[], r: Record<string, DisplayValue>): string[] {
  return columns.map((c) => (r[c] === null || r[c] === undefined ? 'NULL' : String(r[c])));
}

function pick(columns: string[], r: Record<string, DisplayValue>): Record<string, DisplayValue> {
  const out: Record<string, DisplayValue> = {};
  for (const c of columns) out[c] = r[c] ?? null;
  return out;
}

function csvCell(v: DisplayValue | string): string {
  if (v === null) return '';
  const s = String(v);
  return /[",\n\r]/.test(s) || s !== s.trim() ? `"${s.replace(/"/g, '""')}"` : s;
}

function displayWidth(s: string): number {
  // Code points, not UTF-16 units; ASCII (the common case) needs no iteration.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range starts at U+0000 by definition
  return /^[\x00-\x7f]*$/.test(s) ? s.length : [...s].length;
}

function pad(s: string, width: number, right: boolean): string {
  const fill = ' '.repeat(Math.max(0, width - displayWidth(s)));
  return right ? fill + s : s + fill;
}

/**
 * What the CLI prints to when it owns stdout. A reader that goes away (`varve read | head -1`)
 * closes the pipe: the next write fails with EPIPE, which ends the command quietly with exit 0,
 * as `cat` does, instead of an unhandled 'error' event and a stack trace.
 */
export function stdoutOutput(): (text: string) => void {
  let closed = false;
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE' && e.code !== 'ERR_STREAM_DESTROYED') throw e;
    closed = true;
    // The reader has what it wanted: stop here, whatever the command was doing (a follow-mode
    // tail would otherwise wait for its next change before noticing).
    process.exit(0);
  });
  return (text) => {
    if (closed) throw new OutputClosedError();
    process.stdout.write(text);
  };
}

/** Thrown by a write to a stdout whose reader has gone: the command stops and exits 0. */
export class OutputClosedError extends Error {
  constructor() {
    super('stdout was closed by its reader');
    this.name = 'OutputClosedError';
  }
}

/** A size for people: `512 B`, `3.0 KiB`, `1.5 MiB`, `2.0 GiB` (binary units, one decimal above bytes). */
export function formatSize(bytes: number): string {
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  if (bytes < 1024) return `${bytes} B`;
  let v = bytes / 1024;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(1)} ${units[u]}`;
}
