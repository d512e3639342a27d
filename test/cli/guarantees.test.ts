/**
 * Issue 10's repros as a user meets them, each command its own OS process: idempotent retried
 * writes across processes, consumer expiry that is never silent, one reader per consumer id, a
 * dropped table that stays dropped.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../lib/cli/main.js';
import { varveProcess } from '../helpers/cli-process.js';

let dir: string;
let wh: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'varve-guarantees-'));
  wh = join(dir, 'wh');
});

function file(name: string, content: string): string {
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
}

/** `varve` inside the test process (one OS process); `varveProcess` is another one. */
async function varve(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(['--warehouse', wh, ...args], { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

function ok(r: { code: number; out: string; err: string }): string {
  expect(r.code, r.err).toBe(0);
  return r.out;
}

describe('repro 3: --commit-identifier across processes', () => {
  it('a second `varve write --commit-identifier retry-42` in another OS process commits nothing on an aggregation table', async () => {
    // Prepare
    ok(await varve('create', 'db.agg', '--schema', 'k BIGINT, n BIGINT', '--primary-key', 'k', '-o', 'merge-engine=aggregation', '-o', 'fields.n.aggregate-function=sum'));
    const input = file('in.jsonl', '{"k": 1, "n": 10}\n');
    // Act
    const first = ok(await varve('write', 'db.agg', input, '--commit-identifier', 'retry-42'));
    ok(await varve('write', 'db.agg', file('other.jsonl', '{"k": 2, "n": 1}\n'), '--commit-user', 'someone-else'));
    const second = ok(varveProcess(wh, ['write', 'db.agg', input, '--commit-identifier', 'retry-42', '--commit-user', 'retrying-job']));
    const read = ok(await varve('read', 'db.agg', '--format', 'jsonl'));
    // Assess
    expect(first).toMatch(/snapshot 1/);
    expect(second).toMatch(/already committed as snapshot 1/);
    expect(read.trim().split('\n').map((l) => JSON.parse(l))).toEqual([{ k: 1, n: 10 }, { k: 2, n: 1 }]);
    const snapshots = ok(await varve('sys', 'db.agg', 'snapshots', '--format', 'jsonl')).trim().split('\n').map((l) => JSON.parse(l));
    expect(snapshots.map((s: { commit_user: string }) => s.commit_user)).toEqual([expect.stringMatching(/^writer-/), 'someone-else']);
  });
});
