/**
 * `varve read` of a table too big to print in one piece: every format prints all 300,000 rows
 * (the table format once overflowed the stack at 130,000); every format prints as it reads, so a
 * reader that stops early stops the command at once with exit 0 (in process, for each format);
 * and a real closed pipe (`read | head -1`, `tail | head -1`, separate OS processes) ends the
 * command quietly with exit 0. The pipe is handled in one place for every command
 * (stdoutOutput in lib/cli/output.ts), so one `read` and one `tail` pipeline prove it; the table
 * is written through the library (the JSONL input path has its own tests).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { openCatalog } from '../../lib/catalog/open-catalog.js';
import { runCli } from '../../lib/cli/main.js';
import { OutputClosedError } from '../../lib/cli/output.js';
import { runVarve } from '../helpers/cli-process.js';

const ROWS = 300_000;
let dir: string;

const varve = (...args: string[]) => runVarve(join(dir, 'wh'), args);

/** Runs the installed launcher in a shell pipeline; returns varve's exit code and both outputs. */
function pipeline(args: string, consumer: string): { code: number; out: string; err: string } {
  const root = join(__dirname, '../..');
  const script = `node ${join(root, 'bin/varve.mjs')} --warehouse '${join(dir, 'wh')}' ${args} 2>'${join(dir, 'err.txt')}' | ${consumer}; echo "exit=\${PIPESTATUS[0]}"; cat '${join(dir, 'err.txt')}' >&2`;
  const r = spawnSync('bash', ['-c', script], { encoding: 'utf8', cwd: root, timeout: 600_000 }); // a backstop: tsx starts slowly on a loaded machine
  const m = /exit=(\d+)\s*$/.exec(r.stdout);
  return { code: m ? Number(m[1]) : -1, out: r.stdout.replace(/exit=\d+\s*$/, ''), err: r.stderr };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'varve-large-read-'));
  expect(
    (await varve('create', 'db.big', '--schema', 'id BIGINT, v STRING', '--primary-key', 'id', '-o', 'bucket=2')).code,
  ).toBe(0);
  const table = await openCatalog(join(dir, 'wh')).getTable('db.big');
  await table.write(Array.from({ length: ROWS }, (_, i) => ({ id: BigInt(i), v: `value-${i}` })));
}, 120_000);

describe(`varve read of ${ROWS} rows`, () => {
  it('prints every row in the table format, with the row count last', async () => {
    const r = await varve('read', 'db.big');
    expect(r.code, r.err).toBe(0);
    const lines = r.out.trimEnd().split('\n');
    expect(lines).toHaveLength(ROWS + 3);
    expect(lines[0].trim().split(/\s+/)).toEqual(['id', 'v']);
    expect(lines.at(-1)).toBe(`(${ROWS} rows)`);
    const ids = lines.slice(2, -1).map((l) => Number(l.trim().split(/\s+/)[0]));
    expect(new Set(ids).size).toBe(ROWS);
  });

  it('prints every row as JSON lines and as CSV', async () => {
    const j = await varve('read', 'db.big', '--format', 'jsonl');
    const c = await varve('read', 'db.big', '--format', 'csv');
    expect(j.code, j.err).toBe(0);
    expect(c.code, c.err).toBe(0);
    const rows = j.out
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: number; v: string });
    expect(rows).toHaveLength(ROWS);
    expect(rows.every((r) => r.v === `value-${r.id}`)).toBe(true);
    const csv = c.out.trimEnd().split('\n');
    expect(csv[0]).toBe('id,v');
    expect(csv).toHaveLength(ROWS + 1);
  });

  it.each(['table', 'jsonl', 'csv'])(
    'read --format %s prints as it reads: a reader that stops after the first output stops the command with exit 0',
    async (format) => {
      // The output callback goes away after its first text, as a closed pipe does (OutputClosedError).
      let writes = 0;
      let printed = 0;
      let err = '';
      const code = await runCli(['--warehouse', join(dir, 'wh'), 'read', 'db.big', '--format', format], {
        out: (t) => {
          if (writes++ > 0) throw new OutputClosedError();
          printed += t.split('\n').length - 1;
        },
        err: (t) => void (err += t),
      });
      expect(err).toBe('');
      expect(code).toBe(0);
      // Only the first slice was printed, not the table.
      expect(printed).toBeGreaterThan(0);
      expect(printed).toBeLessThan(ROWS / 2);
    },
  );

  it('read | head -1 ends quietly with exit 0 (a real pipe, separate processes)', () => {
    const r = pipeline('read db.big --format jsonl', 'head -1');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(r.out.trim())).toHaveProperty('id');
  }, 300_000);

  it('tail | head -1 ends quietly with exit 0', () => {
    const r = pipeline('tail db.big', 'head -1');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out.trim())).toMatchObject({ kind: '+I' });
  }, 300_000);
});
