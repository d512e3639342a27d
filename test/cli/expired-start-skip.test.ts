/**
 * Issue 30 §2: a stream whose START position had already expired, started with
 * `--on-expired skip-to-earliest`, names what it skipped like any other skip (docs/GUARANTEES.md,
 * "no silent loss"): `tail --snapshot N`, `--from snapshot:N` and `--tag` print a
 * `snapshots-skipped` event and say so on stderr; a new consumer id says so on stderr and keeps
 * the gap in its consumer file (`sys consumers` shows it as skipped_snapshots).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { afterFloor } from '../helpers/expiry-clock.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runVarve, varveProcess } from '../helpers/cli-process.js';

let dir: string;
let wh: string;

const varve = (...args: string[]) => runVarve(wh, args);

function ok(r: { code: number; out: string; err: string }): string {
  expect(r.code, r.err).toBe(0);
  return r.out;
}

/** The JSON lines a tail printed. */
function linesOf(out: string): Array<Record<string, unknown>> {
  return out
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

beforeAll(async () => {
  // Prepare: snapshots 1..4, a tag on 2, then every snapshot but the latest expires
  dir = mkdtempSync(join(tmpdir(), 'varve-expired-start-'));
  wh = join(dir, 'wh');
  ok(await varve('create', 'db.t', '--schema', 'id BIGINT, v STRING', '--primary-key', 'id'));
  for (const id of [1, 2, 3, 4]) {
    const f = join(dir, `r${id}.jsonl`);
    writeFileSync(f, `{"id": ${id}, "v": "x"}\n`);
    ok(await varve('write', 'db.t', f));
  }
  ok(await varve('tag', 'db.t', 'create', 't1', '--snapshot', '2'));
  ok(await afterFloor(() => varve('expire', 'db.t', '--retain-min', '1', '--older-than', '0s')));
  expect(linesOf(ok(await varve('sys', 'db.t', 'snapshots', '--format', 'jsonl'))).map((s) => s.snapshot_id)).toEqual([
    4,
  ]);
}, 300_000);

describe('a stream whose start had expired, with --on-expired skip-to-earliest', () => {
  it.each([
    ['--snapshot 1', ['--snapshot', '1'], 1],
    ['--from snapshot:1', ['--from', 'snapshot:1'], 1],
    ['--tag t1 (snapshot 2)', ['--tag', 't1'], 2],
  ])(
    'tail %s names the skipped snapshots on stdout and stderr, then streams from the earliest',
    async (_what, start, from) => {
      // Act
      const r = await varve('tail', 'db.t', ...start, '--on-expired', 'skip-to-earliest');

      // Assess: the skip comes first, as an event, then the changes of snapshot 4
      expect(r.code, r.err).toBe(0);
      const lines = linesOf(r.out);
      expect(lines[0]).toMatchObject({ event: 'snapshots-skipped', from, to: 3, snapshot: 4 });
      expect(lines.slice(1).map((l) => (l.row as { id: number }).id)).toEqual([4]);
      expect(r.err).toMatch(new RegExp(`snapshots ${from}\\.\\.3 expired before this stream read them`));
    },
    120_000,
  );

  it('without it, the same start fails naming the lost range', async () => {
    const r = await varve('tail', 'db.t', '--snapshot', '1');
    expect(r.code).not.toBe(0);
    expect(r.out).toBe('');
    expect(r.err).toMatch(/snapshot 1 of db\.t has expired.*snapshots 1\.\.3 are lost/);
  }, 120_000);

  it('a new consumer id started there says so on stderr, and sys consumers shows the skipped snapshots', async () => {
    // Act: its own OS process (the local runtime reports on the process's stderr)
    const r = varveProcess(wh, [
      'tail',
      'db.t',
      '--consumer-id',
      'fresh',
      '--from',
      'snapshot:1',
      '--on-expired',
      'skip-to-earliest',
    ]);
    const consumers = linesOf(ok(await varve('sys', 'db.t', 'consumers', '--format', 'jsonl')));

    // Assess
    expect(r.code, r.err).toBe(0);
    expect(linesOf(r.out).map((l) => (l.row as { id: number }).id)).toEqual([4]);
    expect(r.err).toMatch(/consumer fresh of db\.t skipped snapshots 1\.\.3: they had expired before it read them/);
    expect(consumers).toEqual([
      expect.objectContaining({ consumer_id: 'fresh', status: 'active', skipped_snapshots: '1..3' }),
    ]);
  }, 300_000);
});
