/**
 * `varve tail` and `varve demo` as a user runs them, through runCli against a folder warehouse.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../lib/cli/main.js';
import { parseFrom } from '../../lib/cli/parse-flags.js';
import { InvalidArgumentError } from '../../lib/errors.js';
import { runVarve } from '../helpers/cli-process.js';
import { LogLines } from '../helpers/log-lines.js';

let dir: string;

const varve = (...args: string[]) => runVarve(join(dir, 'wh'), args);

/** Runs the CLI, telling `onErr` each stderr text as it comes. */
const varveWatching = (onErr: (text: string) => void, ...args: string[]) => runVarve(join(dir, 'wh'), args, { onErr });

async function write(table: string, rows: object[]): Promise<void> {
  const file = join(dir, `in-${Math.random()}.jsonl`);
  const { writeFileSync } = await import('node:fs');
  writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  expect((await varve('write', table, file)).code).toBe(0);
}

const lines = (out: string) =>
  out
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'varve-tail-'));
  expect(
    (await varve('create', 'db.t', '--schema', 'id BIGINT, v STRING', '--primary-key', 'id', '-o', 'bucket=2')).code,
  ).toBe(0);
});

describe('varve tail', () => {
  it('prints the latest state as +I lines by default, and every change with --from earliest', async () => {
    // Prepare
    await write('db.t', [{ id: 1, v: 'a' }]);
    await write('db.t', [{ id: 1, v: 'b' }]);
    // Act
    const latest = await varve('tail', 'db.t');
    const earliest = await varve('tail', 'db.t', '--from', 'earliest');
    const fromTwo = await varve('tail', 'db.t', '--from', 'snapshot:2');
    // Assess
    expect(lines(latest.out)).toEqual([{ snapshot: 2, kind: '+I', row: { id: 1, v: 'b' } }]);
    expect(lines(earliest.out)).toEqual([
      { snapshot: 1, kind: '+I', row: { id: 1, v: 'a' } },
      { snapshot: 2, kind: '+I', row: { id: 1, v: 'b' } },
    ]);
    expect(lines(fromTwo.out).map((l) => l.snapshot)).toEqual([2]);
  });

  it('with --consumer-id resumes where the previous tail stopped', async () => {
    // Prepare
    await write('db.t', [{ id: 1, v: 'a' }]);
    const first = await varve('tail', 'db.t', '--consumer-id', 'me', '--from', 'earliest');
    await write('db.t', [{ id: 2, v: 'b' }]);
    // Act
    const second = await varve('tail', 'db.t', '--consumer-id', 'me');
    const consumers = await varve('sys', 'db.t', 'consumers', '--format', 'jsonl');
    // Assess
    expect(lines(first.out)).toEqual([{ snapshot: 1, kind: '+I', row: { id: 1, v: 'a' } }]);
    expect(lines(second.out)).toEqual([{ snapshot: 2, kind: '+I', row: { id: 2, v: 'b' } }]);
    expect(consumers.out).toContain('"me"');
  });

  it('--follow prints changes committed while it runs and stops after --max-changes', async () => {
    // Prepare
    await write('db.t', [{ id: 1, v: 'a' }]);
    // Act: write only once the tail says it follows (no race with its start, however busy the machine)
    let following!: () => void;
    const ready = new Promise<void>((r) => (following = r));
    const tail = varveWatching(
      (t) => t.includes('following db.t from snapshot 2') && following(),
      'tail',
      'db.t',
      '--from',
      'latest',
      '--follow',
      '--max-changes',
      '2',
    );
    await ready;
    await write('db.t', [{ id: 2, v: 'b' }]);
    await write('db.t', [
      { id: 3, v: 'c' },
      { id: 4, v: 'd' },
    ]);
    const result = await tail;
    // Assess: the first change of snapshot 3 makes two; the tail stops there
    expect(result.code).toBe(0);
    expect(lines(result.out)).toHaveLength(2);
    expect(lines(result.out)[0]).toEqual({ snapshot: 2, kind: '+I', row: { id: 2, v: 'b' } });
    expect(lines(result.out)[1]).toMatchObject({ snapshot: 3, kind: '+I' });
  });

  it('--follow stops after --idle-exit without a new change', async () => {
    await write('db.t', [{ id: 1, v: 'a' }]);
    const result = await varve('tail', 'db.t', '--from', 'latest', '--follow', '--idle-exit', '50');
    expect(result.code).toBe(0);
    expect(result.out).toBe('');
    expect(result.err).toContain('following db.t from snapshot 2');
  });

  it('refuses --max-changes with --consumer-id', async () => {
    const r = await varve('tail', 'db.t', '--consumer-id', 'me', '--max-changes', '1');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/--max-changes works without --consumer-id/);
  });

  it('says what is wrong with a bad --from', async () => {
    expect(() => parseFrom('yesterday')).toThrow(InvalidArgumentError);
    expect(parseFrom('timestamp:2024-05-01T00:00:00Z')).toEqual({
      mode: 'from-timestamp',
      timestampMillis: Date.parse('2024-05-01T00:00:00Z'),
    });
    const r = await varve('tail', 'db.t', '--from', 'nowhere');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/--from "nowhere" is not a start position/);
  });
});

describe('varve demo', () => {
  it('shows inserts, an update, a silent compaction, a delete, a restart and expiry held by the consumer', async () => {
    // Act
    const r = await varve('demo');
    const again = await varve('demo');
    // Assess
    expect(r.code).toBe(0);
    expect(again.code).toBe(0); // re-runnable: the previous demo table is dropped first
    const received = r.out
      .split('\n')
      .filter((l) => l.includes('consumer <-'))
      .map((l) => l.split('consumer <- ')[1].slice(0, 2));
    expect(received).toEqual(['+I', '+I', '+I', '-U', '+U', '-D', '+I', '+I', '+I']);
    expect(r.out).toMatch(/full compaction -> snapshot\(s\) \d+ \(COMPACT\)\n.*\(nothing reached the consumer\)/);
    expect(r.out).toMatch(/held by consumer demo at nextSnapshot (\d+)/);
  }, 300_000);

  it("[ms] is each change's delivery latency: from its commit (after its step began) to its arrival", async () => {
    // Act: the demo, noting when each line is printed
    const printed: Array<{ line: string; at: number }> = [];
    const log = new LogLines();
    const code = await runCli(['--warehouse', join(dir, 'wh'), 'demo'], {
      out: (t) => {
        for (const line of t.split('\n').filter(Boolean)) printed.push({ line, at: Date.now() });
      },
      err: (t) => t.split('\n').filter(Boolean).forEach(log.add),
    });

    // Assess: a change was committed after the heading of its step was printed and had arrived
    // when its line was printed, so its latency lies between 0 and the time since that heading
    // (the time since the demo started, the column's old meaning, is more than that).
    expect(code).toBe(0);
    let heading: { line: string; at: number } | undefined;
    let changes = 0;
    for (const p of printed) {
      if (/^\d\. /.test(p.line)) heading = p;
      const m = /^\[ *(\d+) ms\] +consumer <- /.exec(p.line);
      if (!m) continue;
      changes++;
      expect(heading, 'a change before any step').toBeDefined();
      expect(
        Number(m[1]),
        `${p.line}\n(printed ${p.at - heading!.at} ms after "${heading!.line}")`,
      ).toBeLessThanOrEqual(p.at - heading!.at + 1);
    }
    expect(changes).toBe(9);
    // Nothing went wrong on the way (its runtime logs failed splits, dead letters and skips there).
    log.expectOnly();
  }, 300_000);
});

describe('varve alter', () => {
  it('adds, renames and widens; read, describe and tail follow the new schema; tail says where it changed', async () => {
    // Prepare
    await write('db.t', [{ id: 1, v: 'a' }]);
    // Act
    const alter = await varve('alter', 'db.t', '--add', 'n INT', '--rename', 'v=label', '--comment', 'demo table');
    const widen = await varve('alter', 'db.t', '--type', 'n BIGINT', '--set', 'snapshot.num-retained.min=5');
    const refused = await varve('alter', 'db.t', '--set', 'merge-engine=first-row');
    await write('db.t', [{ id: 2, label: 'b', n: 7 }]);
    const read = await varve('read', 'db.t', '--format', 'jsonl');
    const old = await varve('read', 'db.t', '--snapshot', '1', '--format', 'jsonl');
    const describe = await varve('describe', 'db.t');
    const tail = await varve('tail', 'db.t', '--from', 'earliest');
    // Assess
    expect(alter.out).toContain('schema 1, snapshot 2');
    expect(widen.out).toContain('schema 2, snapshot 3');
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/merge-engine cannot change after the table is created: the stored versions/);
    expect(lines(read.out)).toEqual([
      { id: 1, label: 'a', n: null },
      { id: 2, label: 'b', n: 7 },
    ]);
    expect(lines(old.out)).toEqual([{ id: 1, v: 'a' }]);
    expect(describe.out).toMatch(/schema id\s+2/);
    expect(describe.out).toMatch(/comment\s+demo table/);
    expect(lines(tail.out)).toEqual([
      { snapshot: 1, kind: '+I', row: { id: 1, v: 'a' } },
      {
        snapshot: 2,
        event: 'schema-change',
        from: 0,
        to: 1,
        schemaId: 1,
        changes: ['rename column v to label', 'add column n INT', 'set the table comment'],
        columns: ['id BIGINT NOT NULL', 'label STRING', 'n INT'],
      },
      {
        snapshot: 3,
        event: 'schema-change',
        from: 1,
        to: 2,
        schemaId: 2,
        changes: ['change column n from INT to BIGINT', 'set option snapshot.num-retained.min=5'],
        columns: ['id BIGINT NOT NULL', 'label STRING', 'n BIGINT'],
      },
      { snapshot: 4, kind: '+I', row: { id: 2, label: 'b', n: 7 } },
    ]);
    expect(tail.err).toContain(
      'schema changed at snapshot 2: schema 0 -> 1 (rename column v to label; add column n INT; set the table comment)',
    );
    // A consumer started after the change reads every change in the new schema: no change to announce.
    const consumed = await varve('tail', 'db.t', '--from', 'earliest', '--consumer-id', 'c1');
    expect(lines(consumed.out)).toEqual([
      { snapshot: 1, kind: '+I', row: { id: 1, label: 'a', n: null } },
      { snapshot: 4, kind: '+I', row: { id: 2, label: 'b', n: 7 } },
    ]);
  });
});
