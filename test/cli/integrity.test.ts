/**
 * Issue 30 §3 from the command line: damage at rest is an error, never data. A byte flipped in the
 * middle of a data file fails `read`, `tail` and `compact --full` naming the file and the table, and
 * `verify` exits 1 naming it (`--quick` keeps the existence check only); a file cut to half fails
 * `verify`; a snapshot written under a schema whose file is gone fails `verify` and `compact`
 * naming the schema.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { runVarve } from '../helpers/cli-process.js';

let dir: string;
const varve = (...args: string[]) => runVarve(join(dir, 'wh'), args);

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'varve-integrity-'));
});

/** A table db.t with one data file of 2,000 rows; returns that file's path. */
async function oneFileTable(): Promise<string> {
  await varve('create', 'db.t', '--schema', 'id BIGINT, v STRING', '--primary-key', 'id');
  const input = join(dir, 'in.jsonl');
  writeFileSync(
    input,
    Array.from({ length: 2000 }, (_, i) => JSON.stringify({ id: i, v: `value-${i}` })).join('\n') + '\n',
  );
  expect((await varve('write', 'db.t', input)).code).toBe(0);
  const bucket = join(dir, 'wh', 'db.db', 't', 'bucket-0');
  return join(bucket, readdirSync(bucket).find((f) => f.startsWith('data-'))!);
}

describe('damage at rest from the CLI', () => {
  it('a byte flipped in the middle of a data file: read, tail and compact --full fail naming it, verify exits 1 naming it', async () => {
    // Prepare: two files of the same keys (so that compaction must read both), the first damaged.
    const file = await oneFileTable();
    expect((await varve('write', 'db.t', join(dir, 'in.jsonl'))).code).toBe(0);
    const name = file.slice(file.lastIndexOf('/') + 1);
    const bytes = readFileSync(file);
    bytes[Math.floor(bytes.length / 2)] ^= 0x10;
    writeFileSync(file, bytes);
    // Act
    const read = await varve('read', 'db.t', '--format', 'jsonl');
    const tail = await varve('tail', 'db.t', '--snapshot', '1');
    const compact = await varve('compact', 'db.t', '--full');
    const verify = await varve('verify', 'db.t');
    const quick = await varve('verify', 'db.t', '--quick');
    const snapshots = await varve('sys', 'db.t', 'snapshots', '--format', 'jsonl');
    // Assess
    for (const [what, r] of [
      ['read', read],
      ['tail', tail],
      ['compact', compact],
    ] as const) {
      expect(r.code, what).not.toBe(0);
      expect(r.err, what).toContain(name);
      expect(r.err, what).toMatch(/of table db\.t is damaged/);
    }
    expect(read.out).toBe('');
    expect(tail.out).toBe('');
    expect(snapshots.out.trim().split('\n')).toHaveLength(2);
    expect(verify.code).toBe(1);
    expect(verify.out).toMatch(
      new RegExp(`snapshot 1: file \\S*${name} is damaged: column v of row group 0 has CRC-32`),
    );
    expect(quick.code).toBe(0);
  });

  it('a data file cut to half: verify exits 1 naming it, and read fails', async () => {
    const file = await oneFileTable();
    const name = file.slice(file.lastIndexOf('/') + 1);
    truncateSync(file, Math.floor(readFileSync(file).length / 2));
    const verify = await varve('verify', 'db.t');
    const read = await varve('read', 'db.t');
    expect(verify.code).toBe(1);
    expect(verify.out).toMatch(
      new RegExp(`${name} is damaged: is \\d+ bytes, its manifest entry records \\d+ \\(cut short`),
    );
    expect(read.code).not.toBe(0);
    expect(read.err).toContain(name);
  });

  it('a snapshot written under a schema whose file is missing: verify and compact name the schema', async () => {
    // Prepare: snapshots under schema 1, then its file removed.
    await oneFileTable();
    const input = join(dir, 'more.jsonl');
    writeFileSync(input, '{"id":1,"v":"x","n":1}\n');
    expect((await varve('alter', 'db.t', '--add', 'n INT')).code).toBe(0);
    expect((await varve('write', 'db.t', input)).code).toBe(0);
    expect((await varve('write', 'db.t', input)).code).toBe(0);
    rmSync(join(dir, 'wh', 'db.db', 't', 'schema', 'schema-1'));
    // Act
    const verify = await varve('verify', 'db.t');
    const compact = await varve('compact', 'db.t', '--full');
    const read = await varve('read', 'db.t');
    // Assess
    expect(verify.code).toBe(1);
    expect(verify.out).toMatch(
      /snapshot 2: schema 1, which it was written under, cannot be read: schema 1 of table db\.t is missing/,
    );
    for (const [what, r] of [
      ['compact', compact],
      ['read', read],
    ] as const) {
      expect(r.code, what).toBe(1);
      expect(r.err, what).toMatch(/schema 1 of table db\.t is missing \(\S*schema\/schema-1\)/);
    }
  });
});

describe('schemas across time from the CLI (issue 30 §4)', () => {
  it('time travel shows a snapshot in the schema it was written under; after a rollback reads and writes use the current schema', async () => {
    // Prepare: a snapshot under INT, DECIMAL(10,2), FLOAT and v, then the types widened and v renamed.
    await varve(
      'create',
      'db.t',
      '--schema',
      'id BIGINT, i INT, d DECIMAL(10,2), f FLOAT, v STRING',
      '--primary-key',
      'id',
    );
    const old = join(dir, 'old.jsonl');
    const cur = join(dir, 'cur.jsonl');
    writeFileSync(old, '{"id":1,"i":5,"d":"1.25","f":1.5,"v":"a"}\n');
    writeFileSync(cur, '{"id":2,"i":6,"d":"2.25","f":2.5,"label":"b"}\n');
    expect((await varve('write', 'db.t', old)).code).toBe(0);
    expect(
      (
        await varve(
          'alter',
          'db.t',
          '--type',
          'i BIGINT',
          '--type',
          'd DECIMAL(12,2)',
          '--type',
          'f DOUBLE',
          '--rename',
          'v=label',
        )
      ).code,
    ).toBe(0);
    expect((await varve('write', 'db.t', cur)).code).toBe(0);
    // Act: time travel to before the alter, then a rollback to it (the README tour's step).
    const readOld = await varve('read', 'db.t', '--snapshot', '1', '--format', 'jsonl');
    const auditOld = await varve('audit-log', 'db.t', '--snapshot', '1', '--format', 'jsonl');
    expect((await varve('rollback', 'db.t', '--to-snapshot', '1')).code).toBe(0);
    const afterRollback = await varve('read', 'db.t', '--format', 'jsonl');
    const writeCurrent = await varve('write', 'db.t', cur);
    const writeOld = await varve('write', 'db.t', old);
    const latest = await varve('read', 'db.t', '--format', 'jsonl');
    // Assess
    expect(readOld.code).toBe(0);
    expect(readOld.out).toBe('{"id":1,"i":5,"d":"1.25","f":1.5,"v":"a"}\n');
    expect(auditOld.code).toBe(0);
    expect(auditOld.out).toBe('{"rowkind":"+I","id":1,"i":5,"d":"1.25","f":1.5,"v":"a"}\n');
    expect(afterRollback.code).toBe(0);
    expect(afterRollback.out).toBe('{"id":1,"i":5,"d":"1.25","f":1.5,"label":"a"}\n');
    expect(writeCurrent.code).toBe(0);
    expect(writeOld.code).toBe(1);
    expect(writeOld.err).toMatch(/unknown column "v"/);
    expect(latest.out).toBe(
      '{"id":1,"i":5,"d":"1.25","f":1.5,"label":"a"}\n{"id":2,"i":6,"d":"2.25","f":2.5,"label":"b"}\n',
    );
  });
});
