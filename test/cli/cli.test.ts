/**
 * The CLI as a user drives it: the examples of the primary-key table issue, end to end through
 * `runCli` against a folder warehouse, plus bad input and the `npx varve` launcher.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { jsonlRows, runVarve } from '../helpers/cli-process.js';

let dir: string;

const varve = (...args: string[]) => runVarve(join(dir, 'wh'), args);

function file(name: string, content: string): string {
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
}

const jsonl = (rows: object[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'varve cli ü-'));
});

describe('varve CLI', () => {
  it('deduplicate: one write of (1,A),(2,B),(1,C) stores 2 records; reads give 1→C, 2→B', async () => {
    // Prepare
    expect((await varve('create', 'db.t', '--schema', 'id BIGINT, v STRING', '--primary-key', 'id')).code).toBe(0);
    // Act
    const w = await varve(
      'write',
      'db.t',
      file(
        'in.jsonl',
        jsonl([
          { id: 1, v: 'A' },
          { id: 2, v: 'B' },
          { id: 1, v: 'C' },
        ]),
      ),
    );
    const r = await varve('read', 'db.t', '--format', 'jsonl');
    const files = await varve('sys', 'db.t', 'files', '--format', 'jsonl');
    // Assess
    expect(w.code, w.err).toBe(0);
    expect(jsonlRows(r.out)).toEqual([
      { id: 1, v: 'C' },
      { id: 2, v: 'B' },
    ]);
    const fileRows = jsonlRows(files.out);
    expect(fileRows).toHaveLength(1);
    expect(fileRows[0].record_count).toBe(2);
  });

  it('deduplicate: the same rows in two commits give 2 files, 3 records, the same read', async () => {
    await varve('create', 'db.t', '--schema', 'id BIGINT, v STRING', '--primary-key', 'id');
    await varve(
      'write',
      'db.t',
      file(
        'a.jsonl',
        jsonl([
          { id: 1, v: 'A' },
          { id: 2, v: 'B' },
        ]),
      ),
    );
    await varve('write', 'db.t', file('b.jsonl', jsonl([{ id: 1, v: 'C' }])));
    const r = await varve('read', 'db.t', '--format', 'jsonl');
    const files = jsonlRows<{ record_count: number }>((await varve('sys', 'db.t', 'files', '--format', 'jsonl')).out);
    expect(jsonlRows(r.out)).toEqual([
      { id: 1, v: 'C' },
      { id: 2, v: 'B' },
    ]);
    expect(files).toHaveLength(2);
    expect(files.reduce((n: number, f: { record_count: number }) => n + f.record_count, 0)).toBe(3);
  });

  it('aggregation: amounts 10, 20, 5 for keys 1, 2, 1 in one commit store two records and read 1→15, 2→20', async () => {
    await varve(
      'create',
      'db.agg',
      '--schema',
      'id BIGINT, amount BIGINT',
      '--primary-key',
      'id',
      '-o',
      'merge-engine=aggregation',
      '-o',
      'fields.amount.aggregate-function=sum',
    );
    await varve(
      'write',
      'db.agg',
      file(
        'in.jsonl',
        jsonl([
          { id: 1, amount: 10 },
          { id: 2, amount: 20 },
          { id: 1, amount: 5 },
        ]),
      ),
    );
    const r = await varve('read', 'db.agg', '--format', 'jsonl');
    const files = jsonlRows((await varve('sys', 'db.agg', 'files', '--format', 'jsonl')).out);
    expect(jsonlRows(r.out)).toEqual([
      { id: 1, amount: 15 },
      { id: 2, amount: 20 },
    ]);
    expect(files[0].record_count).toBe(2);
  });

  it('changelog-producer=input keeps the raw records: a data file of 2 and a changelog of 3', async () => {
    await varve(
      'create',
      'db.cl',
      '--schema',
      'id BIGINT, v STRING',
      '--primary-key',
      'id',
      '-o',
      'changelog-producer=input',
    );
    await varve(
      'write',
      'db.cl',
      file(
        'in.jsonl',
        jsonl([
          { id: 1, v: 'A' },
          { id: 2, v: 'B' },
          { id: 1, v: 'C' },
        ]),
      ),
    );
    const files = jsonlRows((await varve('sys', 'db.cl', 'files', '--format', 'jsonl')).out);
    const snaps = jsonlRows((await varve('sys', 'db.cl', 'snapshots', '--format', 'jsonl')).out);
    await varve('write', 'db.cl', file('b.jsonl', jsonl([{ id: 3, v: 'D' }])));
    const changelog = await varve(
      'audit-log',
      'db.cl',
      '--incremental-between',
      '0,1',
      '--mode',
      'changelog',
      '--format',
      'jsonl',
    );
    expect(files).toHaveLength(1);
    expect(files[0].record_count).toBe(2);
    expect(snaps[0].changelog_record_count).toBe(3);
    expect(changelog.code, changelog.err).toBe(0);
    expect(jsonlRows(changelog.out)).toEqual([
      { rowkind: '+I', id: 1, v: 'A' },
      { rowkind: '+I', id: 1, v: 'C' },
      { rowkind: '+I', id: 2, v: 'B' },
    ]);
  });

  it('deletes with _kind, time travel by snapshot and tag, audit log and system tables', async () => {
    await varve('create', 'db.t', '--schema', 'id BIGINT, v STRING', '--primary-key', 'id', '-o', 'bucket=2');
    await varve(
      'write',
      'db.t',
      file(
        'a.jsonl',
        jsonl([
          { id: 1, v: 'A' },
          { id: 2, v: 'B' },
          { id: 3, v: 'C' },
        ]),
      ),
    );
    await varve('tag', 'db.t', 'create', 'before-delete');
    await varve('write', 'db.t', file('b.jsonl', jsonl([{ id: 2, _kind: '-D' }])));
    await varve('delete', 'db.t', file('c.csv', 'id\n3\n'));
    const now = await varve('read', 'db.t', '--format', 'jsonl');
    const old = await varve('read', 'db.t', '--snapshot', '1', '--format', 'jsonl');
    const tagged = await varve('read', 'db.t', '--tag', 'before-delete', '--format', 'jsonl');
    const audit = await varve('audit-log', 'db.t', '--format', 'jsonl');
    const tags = await varve('sys', 'db.t', 'tags', '--format', 'jsonl');
    expect(jsonlRows(now.out)).toEqual([{ id: 1, v: 'A' }]);
    expect(old.out.trim().split('\n')).toHaveLength(3);
    expect(tagged.out).toBe(old.out);
    expect(audit.out).toContain('"rowkind":"-D"');
    expect(JSON.parse(tags.out.trim()).snapshot_id).toBe(1);
    for (const sys of ['snapshots', 'files', 'manifests', 'schemas', 'options', 'tags', 'buckets', 'consumers']) {
      const r = await varve('sys', 'db.t', sys);
      expect(r.code, `${sys}: ${r.err}`).toBe(0);
    }
    expect((await varve('tables')).out).toBe('db.t\n');
    expect((await varve('describe', 'db.t')).out).toContain('primary key id');
  });

  it('rejects bad input with the line and field, and commits nothing of it', async () => {
    await varve('create', 'db.t', '--schema', 'id BIGINT, n INT, v STRING', '--primary-key', 'id');
    const cases: Array<[string, RegExp]> = [
      [jsonl([{ id: 1, n: 1 }, { n: 2 }]), /line 2.*primary key.*id/i],
      [jsonl([{ id: 1, n: 'x' }]), /line 1.*"?n"?/],
      [jsonl([{ id: 1, nope: 1 }]), /line 1.*unknown column.*nope/i],
      ['{"id": 1}\n{"id": 2,,}\n', /line 2.*malformed JSON/i],
      [jsonl([{ id: 1, n: 3_000_000_000 }]), /line 1.*n/],
    ];
    for (const [content, message] of cases) {
      const r = await varve('write', 'db.t', file('bad.jsonl', content));
      expect(r.code).toBe(1);
      expect(r.err).toMatch(message);
      expect(r.err.trim().split('\n')).toHaveLength(1);
    }
    const csv = await varve('write', 'db.t', file('bad.csv', 'id,n\n1,"2\n'));
    expect(csv.code).toBe(1);
    expect(csv.err).toMatch(/CSV/);
    expect((await varve('sys', 'db.t', 'snapshots', '--format', 'jsonl')).out).toBe('');
  });

  it('--skip-invalid commits the valid rows and writes the rejected ones with reasons', async () => {
    await varve('create', 'db.t', '--schema', 'id BIGINT, n INT', '--primary-key', 'id');
    const rejects = join(dir, 'rejects.jsonl');
    const r = await varve(
      'write',
      'db.t',
      file(
        'in.jsonl',
        jsonl([
          { id: 1, n: 1 },
          { id: 2, n: 'bad' },
          { id: 3, n: 3 },
        ]),
      ),
      '--skip-invalid',
      rejects,
    );
    expect(r.code, r.err).toBe(0);
    const rejected = readFileSync(rejects, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rejected).toHaveLength(1);
    expect(rejected[0].line).toBe(2);
    expect(rejected[0].reason).toMatch(/n/);
    expect((await varve('read', 'db.t', '--format', 'jsonl')).out.trim().split('\n')).toHaveLength(2);
  });

  it('bad commands and names are one-line errors', async () => {
    const cases = [
      await varve('read', 'nope.nothing'),
      await varve('create', 'db/evil', '--schema', 'id BIGINT', '--primary-key', 'id'),
      await varve('create', 'db.t', '--schema', 'id BIGINT', '--primary-key', 'missing'),
      await varve('create', 'db.t', '--schema', 'id BIGINT', '--primary-key', 'id', '-o', 'no-such-option=1'),
      await varve('create', 'db.t', '--schema', 'id WHATEVER', '--primary-key', 'id'),
    ];
    for (const r of cases) {
      expect(r.code).not.toBe(0);
      expect(r.err.trim().split('\n')).toHaveLength(1);
      expect(r.err).not.toMatch(/at .*\.ts:\d+/);
    }
    expect(cases[0].err).toMatch(/does not exist/);
    expect(cases[3].err).toMatch(/no-such-option/);
  });

  it('runs as `npx varve` through the package bin', () => {
    const r = spawnSync('npx', ['varve', '--warehouse', join(dir, 'wh2'), 'tables'], {
      encoding: 'utf8',
      cwd: join(__dirname, '../..'),
      timeout: 600_000,
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/no tables yet/);
  }, 300_000); // a new process through npx and tsx: slow to start on a loaded machine
});
