/**
 * Outside Iceberg readers for tests: pyiceberg (apache/iceberg-python, run from its source at
 * ../shared/tools/pyiceberg, or VARVE_PYICEBERG_SRC, in the venv .ci/python-venv.sh makes) and
 * icebird (npm, in-process, with a fetch shim for file:// paths). Both return a snapshot's rows as
 * canonical text by column name (read_pyiceberg.py says how each type is written), so they compare
 * with varve's rows (canonicalValue). icebird decodes through hyparquet, which turns decimals into
 * doubles, timestamps into JS Dates (milliseconds) and binary into UTF-8 text: its rows compare in
 * a lossy form (lossyText) of the same canonical text.
 * pyiceberg reads Iceberg v3 deletion vectors through test/iceberg/roaring/pyroaring.py (the
 * machine's pip index has no pyroaring). icebird 0.3.1 reads every delete file as Parquet, so it
 * cannot read a v3 deletion vector (a Puffin file).
 * Under CI=true a reader that cannot run throws; elsewhere the caller gets the reason and skips loudly.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { icebergRead } from 'icebird';
import { expect } from 'vitest';
import { unscaledDecimalText } from '../../lib/schema/decimal-text.js';
import type { DataField, Value } from '../../lib/schema/types.js';
import { ensureVenv, VENV_PYTHON } from '../helpers/python-env.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Rows of one snapshot, as canonical text, by column. */
export interface SnapshotRows {
  columns: string[];
  rows: Array<Array<string | null>>;
}

/** The pyiceberg source folder (holding `pyiceberg/`), or undefined. */
function pyicebergSource(): string | undefined {
  const candidates = [
    process.env.VARVE_PYICEBERG_SRC,
    resolve(ROOT, '../shared/tools/pyiceberg'),
    '/work/shared/tools/pyiceberg',
  ];
  return candidates.find((d): d is string => d !== undefined && existsSync(join(d, 'pyiceberg/__init__.py')));
}

/** A running pyiceberg reader (one Python process answering requests in turn). */
/** A snapshot's summary as pyiceberg reads it, and the counts pyiceberg derives from its manifests. */
export interface SnapshotSummaries {
  summary: Record<string, string>;
  counted: Record<string, string>;
}

/**
 * Checks a snapshot's summary against the counts pyiceberg derives from its manifests (spec
 * "Snapshot Summary"): every added/removed count (file sizes aside: varve does not write them) and
 * the totals. pyiceberg counts every position delete file alike; Iceberg's writers count a v3
 * deletion vector in `added-dvs` / `removed-dvs` instead of the position-delete-file counts.
 */
export function expectSummaryCounts(s: SnapshotSummaries, what: string): void {
  const n = (k: string) => Number(s.counted[k] ?? '0');
  const expected: Record<string, string> = { ...s.counted };
  delete expected['added-files-size'];
  delete expected['removed-files-size'];
  expected['added-position-delete-files'] = String(n('added-position-delete-files') - n('added-dvs'));
  expected['removed-position-delete-files'] = String(n('removed-position-delete-files') - n('removed-dvs'));
  const keys = new Set([
    ...Object.keys(expected),
    'added-data-files',
    'deleted-data-files',
    'added-records',
    'deleted-records',
    'added-delete-files',
    'removed-delete-files',
    'added-dvs',
    'removed-dvs',
    'added-position-deletes',
    'removed-position-deletes',
  ]);
  for (const k of keys) expect(s.summary[k] ?? '0', `${what}: summary ${k}`).toBe(expected[k] ?? '0');
}

export class PyicebergReader {
  private readonly lines: Interface;
  private readonly pending: Array<(line: string) => void> = [];
  private stderr = '';

  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    child.stderr.on('data', (d: Buffer) => (this.stderr = (this.stderr + d.toString()).slice(-4000)));
    this.lines = createInterface({ input: child.stdout });
    this.lines.on('line', (line) => this.pending.shift()?.(line));
  }

  /** Starts the reader, or says why it cannot run (throws instead under CI=true). */
  static start(): PyicebergReader | { unavailable: string } {
    const src = pyicebergSource();
    let reason: string | undefined;
    if (src === undefined)
      reason = 'the pyiceberg source is not at ../shared/tools/pyiceberg (set VARVE_PYICEBERG_SRC to its folder)';
    else reason = ensureVenv();
    if (reason === undefined) {
      const child = spawn(VENV_PYTHON, [join(ROOT, 'test/iceberg/read_pyiceberg.py')], {
        // test/iceberg/roaring holds a real Roaring decoder named pyroaring (v3 deletion vectors);
        // it comes before the source's stubs, whose pyroaring cannot deserialize.
        env: { ...process.env, PYTHONPATH: `${src}:${join(ROOT, 'test/iceberg/roaring')}:${join(src!, 'stubs')}` },
      });
      return new PyicebergReader(child);
    }
    if (process.env.CI === 'true') throw new Error(`pyiceberg cannot run: ${reason}`);
    return { unavailable: reason };
  }

  /** The rows of each snapshot id, read through the metadata file at `metadataPath`. */
  async read(metadataPath: string, snapshots: readonly number[]): Promise<Map<number, SnapshotRows>> {
    const answer = await this.ask<{ snapshots: Record<string, SnapshotRows> }>(
      { metadata: metadataPath, snapshots },
      `snapshots ${snapshots.join(', ')}`,
    );
    return new Map(Object.entries(answer.snapshots).map(([id, rows]) => [Number(id), rows]));
  }

  /**
   * Each snapshot's summary as pyiceberg parses it, and `counted`: what pyiceberg's own writer puts
   * in a summary for the entries that snapshot added and deleted (zeros left out), with the totals
   * of its live entries (read_pyiceberg.py).
   */
  async summaries(metadataPath: string, snapshots: readonly number[]): Promise<Map<number, SnapshotSummaries>> {
    const answer = await this.ask<{ summaries: Record<string, SnapshotSummaries> }>(
      { metadata: metadataPath, summaries: snapshots },
      `the summaries of snapshots ${snapshots.join(', ')}`,
    );
    return new Map(Object.entries(answer.summaries).map(([id, s]) => [Number(id), s]));
  }

  /** One request to the reader process, and its answer. */
  private async ask<T>(
    request: { metadata: string; snapshots?: readonly number[]; summaries?: readonly number[] },
    what: string,
  ): Promise<T> {
    const line = await new Promise<string>((ok, fail) => {
      const onExit = () => fail(new Error(`the pyiceberg reader exited: ${this.stderr}`));
      this.child.once('exit', onExit);
      this.pending.push((l) => {
        this.child.off('exit', onExit);
        ok(l);
      });
      this.child.stdin.write(`${JSON.stringify(request)}\n`);
    });
    const answer = JSON.parse(line) as T & { error?: string };
    if (answer.error !== undefined)
      throw new Error(`pyiceberg failed on ${request.metadata} (${what}): ${answer.error}`);
    return answer;
  }

  close(): void {
    this.lines.close();
    this.child.stdin.end();
    this.child.kill();
  }
}

/** Serves file:// URLs from disk (icebird fetches every file; Node's fetch has no file://). Iceberg paths are not URL-encoded. */
function installFileFetch(): void {
  const original = globalThis.fetch as typeof fetch & { varveFileShim?: true };
  if (original.varveFileShim) return;
  const shim = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (!url.startsWith('file://')) return original(input, init);
    try {
      return new Response(readFileSync(url.slice('file://'.length)), { status: 200 });
    } catch {
      return new Response(null, { status: 404, statusText: `no file ${url}` });
    }
  };
  globalThis.fetch = Object.assign(shim, { varveFileShim: true as const }) as unknown as typeof fetch;
}

interface IcebergField {
  id: number;
  name: string;
  type: string;
}

/** The Iceberg type of each column of snapshot `id`'s schema. */
export function snapshotColumnTypes(metadata: IcebergMetadataJson, id: number): Map<string, string> {
  const s = metadata.snapshots.find((x) => x['snapshot-id'] === id)!;
  const schema = metadata.schemas.find((x) => x['schema-id'] === s['schema-id'])!;
  return new Map(schema.fields.map((f) => [f.name, f.type]));
}

/** The part of the metadata JSON the readers here use. */
export interface IcebergMetadataJson {
  'current-snapshot-id': number;
  'current-schema-id': number;
  schemas: Array<{ 'schema-id': number; fields: IcebergField[] }>;
  snapshots: Array<{ 'snapshot-id': number; 'schema-id': number; summary: Record<string, string> }>;
  [key: string]: unknown;
}

/**
 * icebird's rows of snapshot `id` (time travel: the metadata with that snapshot and its schema
 * made current), in lossy canonical text. An export without data files reads as no rows (icebird
 * refuses a snapshot without a data manifest).
 */
export async function icebirdRows(tableUri: string, metadata: IcebergMetadataJson, id: number): Promise<SnapshotRows> {
  installFileFetch();
  const s = metadata.snapshots.find((x) => x['snapshot-id'] === id)!;
  const schema = metadata.schemas.find((x) => x['schema-id'] === s['schema-id'])!;
  const columns = schema.fields.map((f) => f.name);
  if (s.summary['total-data-files'] === '0') return { columns, rows: [] };
  const travelled = { ...metadata, 'current-snapshot-id': id, 'current-schema-id': s['schema-id'] };
  const records = await icebergRead({ tableUrl: tableUri, metadata: travelled as never });
  return { columns, rows: records.map((r) => schema.fields.map((f) => icebirdText(f.type, r[f.name]))) };
}

function doubleHex(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, v);
  return Buffer.from(view.buffer).toString('hex');
}

/** An icebird (hyparquet) value as lossy canonical text of Iceberg type `type`. */
function icebirdText(type: string, v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (type === 'boolean') return v ? 'true' : 'false';
  if (type === 'float' || type === 'double') return doubleHex(v as number);
  if (type.startsWith('decimal(')) return (v as number).toPrecision(12);
  if (type === 'date') return String((v as Date).getTime() / 86_400_000);
  if (type === 'timestamp') return String((v as Date).getTime());
  return String(v);
}

/** The lossy form (what icebird can return) of exact canonical text of Iceberg type `type`. */
export function lossyText(type: string, text: string | null): string | null {
  if (text === null) return null;
  if (type.startsWith('decimal(')) {
    const scale = Number(/,\s*(\d+)\)$/.exec(type)![1]);
    return (Number(text) / 10 ** scale).toPrecision(12);
  }
  // hyparquet truncates microseconds toward zero (BigInt division), as this does.
  if (type === 'timestamp') return String(BigInt(text) / 1000n);
  if (type === 'binary') return new TextDecoder().decode(Buffer.from(text, 'hex'));
  return text;
}

/** A varve value (as tableToRows returns it) as exact canonical text (see read_pyiceberg.py). */
export function canonicalValue(field: DataField, v: Value): string | null {
  if (v === null || v === undefined) return null;
  const t = field.type;
  switch (t.root) {
    case 'BOOLEAN':
      return v ? 'true' : 'false';
    case 'FLOAT':
    case 'DOUBLE':
      return doubleHex(v as number);
    case 'DECIMAL':
      return unscaledDecimalText(v as string, t.scale ?? 0);
    case 'BYTES':
      return Buffer.from(v as Uint8Array).toString('hex');
    case 'TIMESTAMP':
      return String(t.precision === 6 ? (v as bigint) : (v as bigint) * 1000n);
    default:
      return String(v);
  }
}

/** Rows as sorted JSON lines, columns in name order (so two readers' column orders do not matter). */
export function sortedRowTexts(
  s: SnapshotRows,
  map: (column: string, text: string | null) => string | null = (_c, t) => t,
): string[] {
  const order = s.columns.map((c, i) => [c, i] as const).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return s.rows.map((r) => JSON.stringify(order.map(([c, i]) => map(c, r[i])))).sort();
}
