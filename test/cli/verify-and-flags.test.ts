/**
 * CLI consistency: `varve verify` reports a healthy table and names what a broken one lost (exit
 * 1), `--version` prints the package version, and durations take the same forms everywhere.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { parseDurationFlag } from '../../lib/cli/parse-flags.js';
import { runVarve } from '../helpers/cli-process.js';

let dir: string;

const varve = (...args: string[]) => runVarve(join(dir, 'wh'), args);

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'varve-verify-'));
});

describe('varve verify', () => {
  it('says ok for a healthy table and exits 1 naming the missing data file of a broken one', async () => {
    // Prepare
    await varve('create', 'db.t', '--schema', 'id BIGINT, v STRING', '--primary-key', 'id');
    const input = join(dir, 'in.jsonl');
    writeFileSync(input, '{"id":1,"v":"a"}\n{"id":2,"v":"b"}\n');
    expect((await varve('write', 'db.t', input)).code).toBe(0);
    // Act
    const healthy = await varve('verify', 'db.t');
    const bucket = join(dir, 'wh', 'db.db', 't', 'bucket-0');
    const data = readdirSync(bucket).find((f) => f.startsWith('data-'))!;
    rmSync(join(bucket, data));
    const broken = await varve('verify', 'db.t');
    // Assess
    expect(healthy.code).toBe(0);
    expect(healthy.out).toMatch(/^db\.t: 1 snapshot\(s\), \d+ reference\(s\) checked, 1 file\(s\) read back: ok$/m);
    expect(broken.code).toBe(1);
    expect(broken.out).toContain(data);
    expect(broken.err).toMatch(/db\.t has \d+ problem\(s\)/);
  });
});

describe('CLI flags', () => {
  it('--version prints the package version', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    const r = await varve('--version');
    expect(r.code).toBe(0);
    expect(r.out.trim()).toBe(pkg.version);
  });

  it('durations take one form everywhere: 8s, 500 ms, 10 min, or bare milliseconds', () => {
    expect(parseDurationFlag('--idle-exit', '8s')).toBe(8000);
    expect(parseDurationFlag('--idle-exit', '500 ms')).toBe(500);
    expect(parseDurationFlag('--older-than', '10 min')).toBe(600_000);
    expect(parseDurationFlag('--idle-exit', '250')).toBe(250);
    expect(() => parseDurationFlag('--idle-exit', 'soon')).toThrow(/--idle-exit "soon" is not a duration/);
  });

  it('tail --idle-exit accepts a duration with a unit', async () => {
    await varve('create', 'db.t', '--schema', 'id BIGINT', '--primary-key', 'id');
    const r = await varve('tail', 'db.t', '--from', 'latest', '--follow', '--idle-exit', '50ms');
    expect(r.code).toBe(0);
  });
});

describe('time-travel flags shared by read, count, audit-log and tail', () => {
  it('--snapshot, --timestamp and --tag pick the same snapshot for read and tail', async () => {
    // Prepare: two snapshots, the first tagged
    await varve('create', 'db.t', '--schema', 'id BIGINT, v STRING', '--primary-key', 'id');
    const first = join(dir, 'a.jsonl');
    const second = join(dir, 'b.jsonl');
    writeFileSync(first, '{"id":1,"v":"a"}\n');
    writeFileSync(second, '{"id":2,"v":"b"}\n');
    await varve('write', 'db.t', first);
    expect((await varve('tag', 'db.t', 'create', 'first', '--snapshot', '1')).code).toBe(0);
    await varve('write', 'db.t', second);
    // Act
    const readAt1 = await varve('read', 'db.t', '--snapshot', '1', '--format', 'jsonl');
    const readTag = await varve('read', 'db.t', '--tag', 'first', '--format', 'jsonl');
    const countAt1 = await varve('count', 'db.t', '--snapshot', '1');
    const tailFrom2 = await varve('tail', 'db.t', '--snapshot', '2');
    const both = await varve('tail', 'db.t', '--snapshot', '2', '--from', 'latest');
    const bad = await varve('read', 'db.t', '--snapshot', 'x');
    // Assess
    expect(
      readAt1.out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).id),
    ).toEqual([1]);
    expect(readTag.out).toBe(readAt1.out);
    expect(countAt1.out.trim()).toBe('1');
    expect(tailFrom2.code).toBe(0);
    expect(
      tailFrom2.out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).row.id),
    ).toEqual([2]);
    expect(both.code).toBe(1);
    expect(both.err).toMatch(/give --from or one of --snapshot/);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/--snapshot must be a snapshot id/);
  });
});
