/**
 * Renders records for people (`table`: aligned columns) and for programs (`jsonl`, `csv`).
 * Values are already display values: strings, numbers, booleans or null.
 */
export type OutputFormat = 'table' | 'jsonl' | 'csv';

export type DisplayValue = string | number | boolean | null;

/** One string with every record rendered in the format, ending with a newline when non-empty. */
export function renderRecords(columns: string[], records: Array<Record<string, DisplayValue>>, format: OutputFormat): string {
  if (format === 'jsonl') return records.map((r) => JSON.stringify(pick(columns, r)) + '\n').join('');
  if (format === 'csv') {
    const lines = [columns.map(csvCell).join(',')];
    for (const r of records) lines.push(columns.map((c) => csvCell(r[c] ?? null)).join(','));
    return lines.join('\n') + '\n';
  }
  return renderTable(columns, records);
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

function renderTable(columns: string[], records: Array<Record<string, DisplayValue>>): string {
  const cells = records.map((r) => columns.map((c) => (r[c] === null || r[c] === undefined ? 'NULL' : String(r[c]))));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => displayWidth(row[i]))));
  const numeric = columns.map((c) => records.length > 0 && records.every((r) => r[c] === null || typeof r[c] === 'number'));
  const line = (row: string[]) =>
    row.map((cell, i) => (numeric[i] ? pad(cell, widths[i], true) : pad(cell, widths[i], false))).join('  ').trimEnd();
  const out = [line(columns), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)];
  out.push(`(${records.length} ${records.length === 1 ? 'row' : 'rows'})`);
  return out.join('\n') + '\n';
}

function displayWidth(s: string): number {
  return [...s].length;
}

function pad(s: string, width: number, right: boolean): string {
  const fill = ' '.repeat(Math.max(0, width - displayWidth(s)));
  return right ? fill + s : s + fill;
}
