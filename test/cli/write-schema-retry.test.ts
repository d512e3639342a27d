/**
 * `varve write` across a concurrent alter: the write was planned under the old schema, its commit
 * fails with SchemaChangedError, and the CLI plans it again under the new schema — reading the
 * input again (a pipe from its spool) and checking it against the new columns.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { openCatalog } from '../../lib/catalog/open-catalog.js';
import { runVarve } from '../helpers/cli-process.js';
import { parseAddColumn } from '../../lib/schema/schema-evolution.js';
import type { SchemaChange } from '../../lib/schema/schema-evolution.js';

let dir: string;

const varve = (...args: string[]) => runVarve(join(dir, 'wh'), args);

/** Writes `lines` through a named pipe into `varve write`, running `alter` before the pipe closes. */
async function writeAcrossAlter(
  lines: object[],
  changes: SchemaChange[],
): Promise<{ code: number; out: string; err: string }> {
  const fifo = join(dir, `pipe-${Math.random()}`);
  execFileSync('mkfifo', [fifo]);
  const run = varve('write', 'db.t', fifo, '--format', 'jsonl');
  const pipe = await open(fifo, 'w');
  await pipe.write(lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  const table = await openCatalog(join(dir, 'wh')).getTable('db.t');
  await table.alter(changes);
  await pipe.close();
  return run;
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'varve-write-retry-'));
  expect((await varve('create', 'db.t', '--schema', 'id BIGINT, v STRING', '--primary-key', 'id')).code).toBe(0);
});

describe('varve write across an alter', () => {
  it('plans the write again under the new schema when the input fits it', async () => {
    const w = await writeAcrossAlter(
      [
        { id: 1, v: 'a' },
        { id: 2, v: 'b' },
      ],
      [parseAddColumn('n INT')],
    );
    expect(w.code, w.err).toBe(0);
    expect(w.err).toContain(
      'the schema of db.t changed during the write (schema 0 -> 1: add column n INT); writing again under schema 1',
    );
    expect(w.out).toMatch(/wrote 2 rows in \d+ files, snapshot 2/);
    const read = await varve('read', 'db.t', '--format', 'jsonl');
    expect(
      read.out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual([
      { id: 1, v: 'a', n: null },
      { id: 2, v: 'b', n: null },
    ]);
  });

  it('fails clearly, committing nothing, when the input no longer fits the new schema', async () => {
    const w = await writeAcrossAlter([{ id: 1, v: 'a' }], [{ kind: 'rename-column', from: 'v', to: 'label' }]);
    expect(w.code).toBe(1);
    expect(w.err).toMatch(
      /changed during the write \(now schema 1\) and the input no longer fits it: .*unknown column "v".*nothing was committed/,
    );
    expect((await varve('count', 'db.t')).out.trim()).toBe('0');
  });
});
