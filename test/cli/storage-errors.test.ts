/**
 * Storage errors that are not races, from the command line (issue 30 §5): a warehouse folder the
 * process may not write fails the write at once, naming the cause and the path, with nothing
 * committed; a retried write whose identifier landed in a snapshot expired since says so.
 */
import { existsSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { afterFloor } from '../helpers/expiry-clock.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { runVarve } from '../helpers/cli-process.js';

let dir: string;
const varve = (...args: string[]) => runVarve(join(dir, 'wh'), args);

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'varve-storage-'));
});

function input(name: string, rows: Array<{ id: number; v: string }>): string {
  const file = join(dir, name);
  writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  return file;
}

/**
 * A folder no process may create files in, root included (tests run as root, who ignores file
 * modes): sysfs refuses new files to everyone (EACCES; EROFS where it is mounted read-only).
 */
const UNWRITABLE = '/sys/fs';
const canTest = existsSync(UNWRITABLE) && statSync(UNWRITABLE).isDirectory();

describe('a warehouse folder the write may not write to', () => {
  it.skipIf(!canTest)(
    'fails the write at once naming the cause and the path; nothing is committed, and the table takes the write once the folder is fixed',
    async () => {
      // Prepare: a new table whose manifest folder cannot be written.
      await varve('create', 'db.t', '--schema', 'id BIGINT, v STRING', '--primary-key', 'id');
      const manifests = join(dir, 'wh', 'db.db', 't', 'manifest');
      symlinkSync(UNWRITABLE, manifests);
      // Act
      const refused = await varve('write', 'db.t', input('a.jsonl', [{ id: 1, v: 'a' }]));
      // Assess
      expect(refused.code).not.toBe(0);
      expect(refused.err).toMatch(/\((EACCES|EROFS|EPERM)\)/);
      expect(refused.err).toContain(`${manifests}/manifest-`);
      expect(refused.err).not.toMatch(/busy|gave up/);
      // Nothing half-committed: no snapshot, and the write lands once the folder is fixed.
      rmSync(manifests);
      expect(existsSync(join(dir, 'wh', 'db.db', 't', 'snapshot', 'snapshot-1'))).toBe(false);
      expect((await varve('write', 'db.t', input('b.jsonl', [{ id: 2, v: 'b' }]))).out).toMatch(/snapshot 1\b/);
      expect((await varve('count', 'db.t')).out.trim()).toBe('1');
      expect((await varve('verify', 'db.t')).code).toBe(0);
    },
  );
});

describe('a retried write whose identifier landed in an expired snapshot', () => {
  it('says the snapshot that held it has expired, instead of naming the latest', async () => {
    // Prepare
    await varve('create', 'db.t', '--schema', 'id BIGINT, v STRING', '--primary-key', 'id');
    const first = input('a.jsonl', [{ id: 1, v: 'a' }]);
    expect((await varve('write', 'db.t', first, '--commit-identifier', 'load-1')).out).toMatch(/snapshot 1\b/);
    for (const n of [2, 3, 4])
      expect((await varve('write', 'db.t', input(`${n}.jsonl`, [{ id: n, v: 'x' }]))).code).toBe(0);
    const expired = await afterFloor(() =>
      varve('expire', 'db.t', '--retain-min', '1', '--retain-max', '1', '--older-than', '0'),
    );
    expect(expired.code).toBe(0);
    // Act
    const retried = await varve('write', 'db.t', first, '--commit-identifier', 'load-1');
    // Assess
    expect(retried.code).toBe(0);
    expect(retried.out).toContain('already committed as snapshot 1, which has expired since: nothing written twice');
  });
});
