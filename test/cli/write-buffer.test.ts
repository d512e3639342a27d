/**
 * The seed's write-buffer experiment through the CLI: 50,000 rows of 10 keys in one commit with
 * 'write-buffer-size' = '256 kb' and write-only. Spillable, the buffer spills sorted runs and the
 * commit writes 1 file of 10 records; not spillable, it flushes a level-0 file each time it fills
 * (Paimon: 20 files / 200 records), each merging only its own rows. Both read 10 rows, k=1 → 49991.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import { Table as WasmTable, writeParquet, WriterPropertiesBuilder } from 'parquet-wasm';
import { beforeAll, describe, expect, it } from 'vitest';
import { runVarve } from '../helpers/cli-process.js';

let dir: string;
let input: string;
let parquetInput: string;

const varve = (...args: string[]) => runVarve(join(dir, 'wh'), args);

const jsonLines = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'varve-write-buffer-'));
  input = join(dir, 'in.jsonl');
  let text = '';
  for (let i = 0; i < 50_000; i++) text += `{"k":${i % 10},"v":${i}}\n`;
  writeFileSync(input, text);
  // The same rows as a Parquet file of 10 row groups, read by range row group by row group.
  parquetInput = join(dir, 'in.parquet');
  const k = Int32Array.from({ length: 50_000 }, (_, i) => i % 10);
  const v = Int32Array.from({ length: 50_000 }, (_, i) => i);
  const t = new arrow.Table({ k: arrow.makeVector(k), v: arrow.makeVector(v) });
  writeFileSync(
    parquetInput,
    writeParquet(
      WasmTable.fromIPCStream(arrow.tableToIPC(t, 'stream')),
      new WriterPropertiesBuilder().setMaxRowGroupSize(5_000).build(),
    ),
  );
});

describe('write-buffer-size bounds the writer (the seed experiment)', () => {
  it.each([
    ['true', 'spills sorted runs and writes 1 file of 10 records', 'jsonl'],
    ['false', 'flushes several level-0 files of 10 records each', 'jsonl'],
    ['false', 'flushes several level-0 files of 10 records each', 'parquet'],
  ])('write-buffer-spillable=%s %s; 10 rows read, k=1 → 49991 (%s input)', async (spillable, _what, format) => {
    // Prepare
    const name = `db.seed_${spillable}_${format}`;
    const created = await varve(
      'create',
      name,
      '--schema',
      'k INT, v INT',
      '--primary-key',
      'k',
      '-o',
      'bucket=1',
      '-o',
      'write-buffer-size=256 kb',
      '-o',
      'write-only=true',
      '-o',
      `write-buffer-spillable=${spillable}`,
    );
    expect(created.code, created.err).toBe(0);

    // Act
    const w = await varve('write', name, format === 'parquet' ? parquetInput : input);
    const files = jsonLines((await varve('sys', name, 'files', '--format', 'jsonl')).out) as Array<{
      record_count: number;
      level: number;
    }>;
    const rows = jsonLines((await varve('read', name, '--format', 'jsonl')).out) as Array<{ k: number; v: number }>;

    // Assess
    expect(w.code, w.err).toBe(0);
    expect(w.out).toMatch(/wrote 50000 rows/);
    if (spillable === 'true') {
      expect(files).toHaveLength(1);
      expect(files[0].record_count).toBe(10);
    } else {
      console.log(`not spillable, ${format}: ${files.length} files`);
      expect(files.length).toBeGreaterThan(1);
      expect(files.every((f) => f.record_count === 10 && f.level === 0)).toBe(true);
    }
    expect(rows).toHaveLength(10);
    expect(rows.find((r) => r.k === 1)?.v).toBe(49991);
  });
});
