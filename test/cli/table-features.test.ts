/**
 * The CLI of filtered reads and counts (issue 14): `read --where/--limit/--explain`, `count`,
 * `audit-log --where` and `tail --where`, through runCli against a folder warehouse.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { runVarve } from '../helpers/cli-process.js';

let dir: string;

const varve = (...args: string[]) => runVarve(join(dir, 'wh'), args);

async function write(table: string, rows: object[]): Promise<void> {
  const file = join(dir, `in-${Math.random()}.jsonl`);
  writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  const w = await varve('write', table, file);
  expect(w.code, w.err).toBe(0);
}

const lines = (out: string) =>
  out
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'varve-features-'));
  const c = await varve(
    'create',
    'db.o',
    '--schema',
    'dt STRING, id BIGINT, status STRING, amount DECIMAL(10,2)',
    '--primary-key',
    'dt,id',
    '--partition-keys',
    'dt',
  );
  expect(c.code, c.err).toBe(0);
});

describe('filtered reads in the CLI', () => {
  it('read --where / --limit / --explain, count, audit-log --where and tail --where', async () => {
    // Prepare
    await write('db.o', [
      { dt: '2024-05-01', id: 1, status: 'new', amount: '9.90' },
      { dt: '2024-05-01', id: 2, status: 'new', amount: '5.00' },
      { dt: '2024-05-02', id: 3, status: 'new', amount: '20.00' },
    ]);
    await write('db.o', [{ dt: '2024-05-01', id: 1, status: 'paid', amount: '9.90' }]);
    // Act
    const paid = await varve('read', 'db.o', '--where', "status = 'paid'", '--format', 'jsonl');
    const stale = await varve('read', 'db.o', '--where', "status = 'new' AND id = 1", '--format', 'jsonl');
    const limited = await varve('read', 'db.o', '--where', 'amount >= 5', '--limit', '2', '--format', 'jsonl');
    const explain = await varve('read', 'db.o', '--where', "dt = '2024-05-02' OR id > 100", '--explain');
    const count = await varve('count', 'db.o');
    const countWhere = await varve('count', 'db.o', '--where', "dt = '2024-05-01' AND NOT (status IN ('paid'))");
    const audit = await varve(
      'audit-log',
      'db.o',
      '--incremental-between',
      '0,2',
      '--where',
      'id = 1',
      '--format',
      'jsonl',
    );
    const tail = await varve('tail', 'db.o', '--from', 'earliest', '--where', 'amount > 9');
    const bad = await varve('read', 'db.o', '--where', 'amount >> 3');
    // Assess
    expect(lines(paid.out)).toEqual([{ dt: '2024-05-01', id: 1, status: 'paid', amount: '9.90' }]);
    expect(lines(stale.out)).toEqual([]); // the older 'new' version of id 1 never comes back
    expect(lines(limited.out)).toHaveLength(2);
    expect(explain.out).toMatch(/predicate\s+dt = '2024-05-02' OR id > 100/);
    expect(explain.out).toMatch(/live files\s+3/);
    expect(explain.out).toMatch(/skipped: partition\s+0/);
    expect(explain.out).toMatch(/rows matching\s+1/);
    expect(count.out.trim()).toBe('3');
    expect(countWhere.out.trim()).toBe('1');
    expect(lines(audit.out).map((r) => r.status)).toEqual(['paid']);
    expect(lines(tail.out).map((l) => [l.snapshot, l.row.id])).toEqual([
      [1, 1],
      [1, 3],
      [2, 1],
    ]);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/predicate "amount >> 3", position 9/);
  });

  it('--explain counts the files a key predicate skips', async () => {
    await write('db.o', [{ dt: 'a', id: 1, status: 'x', amount: '1' }]);
    await write('db.o', [{ dt: 'a', id: 50, status: 'x', amount: '1' }]);
    await write('db.o', [{ dt: 'b', id: 1, status: 'x', amount: '1' }]);
    const explain = await varve('read', 'db.o', '--where', "dt = 'a' AND id >= 10", '--explain');
    expect(explain.out).toMatch(/live files\s+3/);
    expect(explain.out).toMatch(/skipped: partition\s+1/);
    expect(explain.out).toMatch(/skipped: key range\s+1/);
    expect(explain.out).toMatch(/files read\s+1/);
  });

  it('write --overwrite, truncate, drop-partition, delete --where; tail warns about the skipped OVERWRITE', async () => {
    await write('db.o', [
      { dt: 'a', id: 1, status: 'new', amount: '1' },
      { dt: 'b', id: 2, status: 'cancelled', amount: '2' },
      { dt: 'c', id: 3, status: 'new', amount: '3' },
    ]);
    const inFile = join(dir, 'over.jsonl');
    writeFileSync(inFile, JSON.stringify({ dt: 'a', id: 9, status: 'new', amount: '9' }) + '\n');
    const over = await varve('write', 'db.o', inFile, '--overwrite');
    expect(over.out).toMatch(/overwrote the partitions written to with 1 rows/);
    expect(lines((await varve('read', 'db.o', '--format', 'jsonl')).out).map((r) => r.id)).toEqual([9, 2, 3]);
    const del = await varve('delete', 'db.o', '--where', "status = 'cancelled'");
    expect(del.out).toMatch(/deleted 1 rows/);
    const drop = await varve('drop-partition', 'db.o', 'dt=c');
    expect(drop.code, drop.err).toBe(0);
    expect(lines((await varve('read', 'db.o', '--format', 'jsonl')).out).map((r) => r.id)).toEqual([9]);
    const tail = await varve('tail', 'db.o', '--from', 'earliest');
    expect(
      lines(tail.out)
        .filter((l) => l.event === 'overwrite-skipped')
        .map((l) => l.snapshot),
    ).toEqual([2, 4]);
    expect((await varve('truncate', 'db.o')).code).toBe(0);
    expect((await varve('count', 'db.o')).out.trim()).toBe('0');
    expect((await varve('drop-partition', 'db.o', 'dt=zz')).err).toMatch(/has no partition dt=zz/);
  });

  it('streaming-read-overwrite=true: tail emits the retractions and new rows of an overwrite, with and without a consumer', async () => {
    await write('db.o', [
      { dt: 'a', id: 1, status: 'new', amount: '1' },
      { dt: 'a', id: 2, status: 'new', amount: '2' },
      { dt: 'b', id: 3, status: 'new', amount: '3' },
    ]);
    const set = await varve('alter', 'db.o', '--set', 'streaming-read-overwrite=true');
    expect(set.code, set.err).toBe(0);
    const inFile = join(dir, 'over.jsonl');
    writeFileSync(
      inFile,
      [
        { dt: 'a', id: 1, status: 'paid', amount: '1' },
        { dt: 'a', id: 9, status: 'new', amount: '9' },
      ]
        .map((r) => JSON.stringify(r))
        .join('\n') + '\n',
    );
    expect((await varve('write', 'db.o', inFile, '--overwrite')).code).toBe(0);
    expect((await varve('truncate', 'db.o')).code).toBe(0);
    const expected = [
      '1 +I a/1 new',
      '1 +I a/2 new',
      '1 +I b/3 new',
      '3 -U a/1 new',
      '3 +U a/1 paid',
      '3 -D a/2 new',
      '3 +I a/9 new',
      '4 -D a/1 paid',
      '4 -D a/9 new',
      '4 -D b/3 new',
    ];
    const show = (out: string) =>
      lines(out)
        .filter((l) => l.kind)
        .map((l) => `${l.snapshot} ${l.kind} ${l.row.dt}/${l.row.id} ${l.row.status}`);
    const tail = await varve('tail', 'db.o', '--from', 'earliest');
    expect(lines(tail.out).filter((l) => l.event === 'overwrite-skipped')).toEqual([]);
    expect(show(tail.out)).toEqual(expected);
    const consumed = await varve('tail', 'db.o', '--from', 'earliest', '--consumer-id', 'c1');
    expect(consumed.code, consumed.err).toBe(0);
    expect(show(consumed.out).sort()).toEqual([...expected].sort());
    // Per key, in order: the replay of the changes is the table's state (empty after the truncate).
    for (const key of ['a/1', 'a/2', 'a/9', 'b/3']) {
      const mine = show(consumed.out).filter((l) => l.includes(` ${key} `));
      expect(mine).toEqual(expected.filter((l) => l.includes(` ${key} `)));
    }
  });

  it("rollback --to-snapshot and --to-tag: one OVERWRITE snapshot with the target's rows, naming what it undid; the history and tags stay", async () => {
    await write('db.o', [{ dt: 'a', id: 1, status: 'x', amount: '1' }]);
    expect((await varve('tag', 'db.o', 'create', 'first')).code).toBe(0);
    await write('db.o', [{ dt: 'a', id: 2, status: 'x', amount: '2' }]);
    await write('db.o', [{ dt: 'a', id: 3, status: 'x', amount: '3' }]);
    expect((await varve('tag', 'db.o', 'create', 'third')).code).toBe(0);
    const back = await varve('rollback', 'db.o', '--to-snapshot', '2');
    expect(back.code, back.err).toBe(0);
    expect(back.out).toMatch(
      /rolled back db\.o to snapshot 2 as snapshot 4 \(OVERWRITE\): undid snapshot 3\nremoved 1 files from the live set, restored 0;.*\ntags on undone snapshots \(kept\): third\n/,
    );
    expect(lines((await varve('read', 'db.o', '--format', 'jsonl')).out).map((r) => r.id)).toEqual([1, 2]);
    expect((await varve('rollback', 'db.o', '--to-tag', 'first')).out).toMatch(
      /to snapshot 1 \(tag first\) as snapshot 5 \(OVERWRITE\): undid snapshots 2\.\.4/,
    );
    expect(lines((await varve('read', 'db.o', '--format', 'jsonl')).out).map((r) => r.id)).toEqual([1]);
    await write('db.o', [{ dt: 'a', id: 4, status: 'x', amount: '4' }]);
    expect(lines((await varve('read', 'db.o', '--format', 'jsonl')).out).map((r) => r.id)).toEqual([1, 4]);
    // The undone snapshots stay readable until they expire; the rollbacks are OVERWRITEs of varve-rollback.
    expect(lines((await varve('read', 'db.o', '--snapshot', '3', '--format', 'jsonl')).out).map((r) => r.id)).toEqual([
      1, 2, 3,
    ]);
    const snaps = lines((await varve('sys', 'db.o', 'snapshots', '--format', 'jsonl')).out);
    expect(snaps.map((r) => r.snapshot_id)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(snaps.filter((r) => r.commit_user === 'varve-rollback').map((r) => [r.snapshot_id, r.commit_kind])).toEqual([
      [4, 'OVERWRITE'],
      [5, 'OVERWRITE'],
    ]);
    expect((await varve('rollback', 'db.o', '--to-snapshot', '6')).out).toMatch(
      /already holds the files of snapshot 6: nothing to roll back/,
    );
    expect((await varve('rollback', 'db.o')).err).toMatch(/exactly one of --to-snapshot N or --to-tag NAME/);
    expect((await varve('rollback', 'db.o', '--to-snapshot', '7')).err).toMatch(/snapshot 7 does not exist/);
  });

  it('sys partitions: record count, size, file count and last update per partition', async () => {
    await write('db.o', [
      { dt: 'a', id: 1, status: 'x', amount: '1' },
      { dt: 'b', id: 2, status: 'x', amount: '2' },
    ]);
    await write('db.o', [{ dt: 'a', id: 3, status: 'x', amount: '3' }]);
    const sys = lines((await varve('sys', 'db.o', 'partitions', '--format', 'jsonl')).out);
    expect(sys.map((r) => [r.partition, r.record_count, r.file_count])).toEqual([
      ['dt=a', 2, 2],
      ['dt=b', 1, 1],
    ]);
    expect(sys[0].file_size_in_bytes).toBeGreaterThan(0);
    expect(Date.parse(sys[0].last_update_time)).toBeGreaterThan(0);
  });

  it('sys statistics: per column null count, min and max from the files, exact or not given; at a snapshot', async () => {
    // An append table: every file has value statistics.
    const c = await varve('create', 'db.a', '--schema', 'id BIGINT, name STRING, score DOUBLE, at DATE');
    expect(c.code, c.err).toBe(0);
    await write('db.a', [
      { id: 5, name: 'eve', score: 2.5, at: '2026-01-02' },
      { id: -3, name: null, score: null, at: '2026-03-01' },
    ]);
    await write('db.a', [{ id: 40, name: 'ann', score: -1, at: null }]);
    const stat = (out: string) => Object.fromEntries(lines(out).map((r) => [r.column, r]));
    const now = stat((await varve('sys', 'db.a', 'statistics', '--format', 'jsonl')).out);
    expect(now.id).toMatchObject({
      snapshot_id: 2,
      type: 'BIGINT',
      record_count: 3,
      file_count: 2,
      files_with_stats: 2,
      null_count: 0,
      min: -3,
      max: 40,
    });
    expect(now.name).toMatchObject({ null_count: 1, min: 'ann', max: 'eve' });
    expect(now.score).toMatchObject({ null_count: 1, min: -1, max: 2.5 });
    expect(now.at).toMatchObject({ type: 'DATE', null_count: 1, min: '2026-01-02', max: '2026-03-01' });
    const first = stat((await varve('sys', 'db.a', 'statistics', '--snapshot', '1', '--format', 'jsonl')).out);
    expect(first.id).toMatchObject({ snapshot_id: 1, record_count: 2, file_count: 1, min: -3, max: 5 });
    // A column added later: the older file has no statistics for it, so no bound is claimed.
    expect((await varve('alter', 'db.a', '--add', 'tag STRING')).code).toBe(0);
    await write('db.a', [{ id: 1, name: 'bo', score: 0, at: null, tag: 't' }]);
    const evolved = stat((await varve('sys', 'db.a', 'statistics', '--format', 'jsonl')).out);
    expect(evolved.tag).toMatchObject({ file_count: 3, files_with_stats: 1, null_count: null, min: null, max: null });
    expect(evolved.id).toMatchObject({ files_with_stats: 3, min: -3, max: 40 });
    // A primary-key table: the first key column's bounds come from the files' key ranges; values have none.
    expect((await varve('create', 'db.k', '--schema', 'k BIGINT, v STRING', '--primary-key', 'k')).code).toBe(0);
    await write('db.k', [
      { k: 7, v: 'a' },
      { k: 2, v: 'b' },
    ]);
    await write('db.k', [{ k: 9, v: 'c' }]);
    const keyed = stat((await varve('sys', 'db.k', 'statistics', '--format', 'jsonl')).out);
    expect(keyed.k).toMatchObject({ record_count: 3, files_with_stats: 2, null_count: 0, min: 2, max: 9 });
    expect(keyed.v).toMatchObject({ files_with_stats: 0, min: null, max: null });
  });
});
