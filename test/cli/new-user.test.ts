/**
 * What a new user trips over (issue 33), each as the user meets it on the command line: a bad
 * input refused with a message that says what was wrong and what to do, or an accept that is
 * documented (docs/CLI-INPUT.md).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { runVarve } from '../helpers/cli-process.js';

let dir: string;
const varve = (...args: string[]) => runVarve(join(dir, 'wh'), args);

function file(name: string, content: string | Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'varve-new-user-'));
});

describe('input values', () => {
  beforeEach(async () => {
    expect(
      (await varve('create', 'db.t', '--schema', 'id BIGINT, x DOUBLE, s STRING', '--primary-key', 'id')).code,
    ).toBe(0);
  });

  it('refuses a JSON number beyond the DOUBLE range instead of storing Infinity', async () => {
    const r = await varve('write', 'db.t', file('big.jsonl', '{"id": 1, "x": 1e400}\n'));
    expect(r.code).toBe(1);
    expect(r.err).toContain('line 1');
    expect(r.err).toMatch(/x: the number is beyond the DOUBLE range .* write "Infinity"/);
    expect((await varve('count', 'db.t')).out.trim()).toBe('0');
    // Meant as infinity: the string says so.
    expect((await varve('write', 'db.t', file('inf.jsonl', '{"id": 1, "x": "Infinity"}\n'))).code).toBe(0);
  });

  it('refuses invalid UTF-8 (JSONL and CSV) naming it, instead of storing U+FFFD', async () => {
    const bytes = new Uint8Array([
      ...new TextEncoder().encode('{"id": 1, "s": "ok"}\n{"id": 2, "s": "caf'),
      0xe9,
      ...new TextEncoder().encode('"}\n'),
    ]);
    const jsonl = await varve('write', 'db.t', file('latin1.jsonl', bytes));
    expect(jsonl.code).toBe(1);
    expect(jsonl.err).toMatch(/line 2: the input is not valid UTF-8 .*iconv/);
    const csv = await varve(
      'write',
      'db.t',
      file('latin1.csv', new Uint8Array([...new TextEncoder().encode('id,x,s\n1,1,caf'), 0xe9, 10])),
    );
    expect(csv.code).toBe(1);
    expect(csv.err).toMatch(/not valid UTF-8/);
    expect((await varve('count', 'db.t')).out.trim()).toBe('0');
  });
});

describe('write', () => {
  it('names a missing input file instead of an unexpected error', async () => {
    expect((await varve('create', 'db.t', '--schema', 'id BIGINT', '--primary-key', 'id')).code).toBe(0);
    const r = await varve('write', 'db.t', join(dir, 'in.jsonl'));
    expect(r.code).toBe(1);
    expect(r.err).toContain(
      `varve: cannot read the input file ${join(dir, 'in.jsonl')} (ENOENT); give an existing file, or - for stdin`,
    );
  });
});

describe('create', () => {
  it('refuses a column named _kind: JSONL reads that field as the row kind', async () => {
    const r = await varve('create', 'db.k', '--schema', 'id BIGINT, _kind STRING', '--primary-key', 'id');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/column name "_kind" is reserved: .*row kind.*rename it/);
  });

  it('refuses a DOUBLE or FLOAT primary key, pointing to DECIMAL', async () => {
    for (const type of ['DOUBLE', 'FLOAT']) {
      const r = await varve(
        'create',
        `db.${type.toLowerCase()}`,
        '--schema',
        `k ${type}, v STRING`,
        '--primary-key',
        'k',
      );
      expect(r.code).toBe(1);
      expect(r.err).toMatch(new RegExp(`primary key column "k" is ${type}: .*use DECIMAL\\(p,s\\) or an integer type`));
    }
  });

  it('refuses -o bucket=99999999 naming the range', async () => {
    const r = await varve('create', 'db.b', '--schema', 'id BIGINT', '--primary-key', 'id', '-o', 'bucket=99999999');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/bucket.*from -1 to 32768/);
  });

  it('names the warehouse when it has no tables, so that a mistyped --warehouse shows', async () => {
    const r = await runVarve(join(dir, 'typo'), ['tables']);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`no tables yet in file://${join(dir, 'typo')}`);
  });
});

describe('tail', () => {
  beforeEach(async () => {
    expect((await varve('create', 'db.t', '--schema', 'id BIGINT, v STRING', '--primary-key', 'id')).code).toBe(0);
    expect((await varve('write', 'db.t', file('a.jsonl', '{"id": 1, "v": "a"}\n'))).code).toBe(0);
  });

  it('refuses --takeover and --ignore-progress without --consumer-id', async () => {
    for (const flag of ['--takeover', '--ignore-progress']) {
      const r = await varve('tail', 'db.t', flag);
      expect(r.code).toBe(1);
      expect(r.err).toContain(`${flag} goes with --consumer-id`);
    }
  });

  it('refuses a start snapshot beyond the next commit, and takes the next one', async () => {
    const r = await varve('tail', 'db.t', '--from', 'snapshot:999');
    expect(r.code).toBe(1);
    expect(r.err).toContain('db.t has no snapshot 999: the latest is 1; start at most at 2');
    expect((await varve('tail', 'db.t', '--snapshot', '999')).code).toBe(1);
    const next = await varve('tail', 'db.t', '--from', 'snapshot:2');
    expect([next.code, next.out]).toEqual([0, '']);
  });
});

describe('--where', () => {
  beforeEach(async () => {
    expect((await varve('create', 'db.d', '--schema', 'id BIGINT, d DECIMAL(5,2)', '--primary-key', 'id')).code).toBe(
      0,
    );
    const rows = ['1.23', '1.24', '-1.23', '-1.24', '999.99'].map((d, i) => JSON.stringify({ id: i, d }));
    expect((await varve('write', 'db.d', file('d.jsonl', rows.join('\n') + '\n'))).code).toBe(0);
  });

  const ds = async (where: string) => {
    const r = await varve('read', 'db.d', '--where', where, '--format', 'jsonl');
    expect(r.code, r.err).toBe(0);
    return r.out.trim() === ''
      ? []
      : r.out
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l).d as string)
          .sort();
  };

  it('compares a DECIMAL column with a literal of more decimals or digits exactly', async () => {
    expect(await ds('d > 1.2345')).toEqual(['1.24', '999.99']);
    expect(await ds('d >= 1.2345')).toEqual(['1.24', '999.99']);
    expect(await ds('d < 1.2345')).toEqual(['-1.23', '-1.24', '1.23']);
    expect(await ds('d <= -1.2345')).toEqual(['-1.24']);
    expect(await ds('d = 1.2345')).toEqual([]);
    expect(await ds('d != 1.2345')).toHaveLength(5);
    expect(await ds('NOT d = 1.2345')).toHaveLength(5);
    expect(await ds('d IN (1.23, 1.2345)')).toEqual(['1.23']);
    expect(await ds('d < 100000')).toHaveLength(5);
    expect(await ds('d > 100000')).toEqual([]);
    expect(await ds('d > -100000.5')).toHaveLength(5);
  });

  it('refuses 20,000 nested parentheses with a message, not a stack overflow', async () => {
    const deep = `${'('.repeat(20_000)}d > 1${')'.repeat(20_000)}`;
    const r = await varve('read', 'db.d', '--where', deep);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/nests deeper than 200 levels .*write it flatter/);
    expect(r.err).not.toMatch(/call stack/);
    // Nesting a person writes is fine.
    expect(await ds(`${'('.repeat(50)}d > 1.235${')'.repeat(50)}`)).toEqual(['1.24', '999.99']);
  });
});

describe('scan mode compacted-full and incremental-between', () => {
  beforeEach(async () => {
    expect((await varve('create', 'db.s', '--schema', 'id BIGINT, v STRING', '--primary-key', 'id')).code).toBe(0);
    for (const [id, v] of [
      [1, 'a'],
      [2, 'b'],
    ] as const)
      expect((await varve('write', 'db.s', file(`${id}.jsonl`, JSON.stringify({ id, v }) + '\n'))).code).toBe(0);
    expect((await varve('compact', 'db.s', '--full')).out).toMatch(/snapshot 3/);
    expect((await varve('write', 'db.s', file('3.jsonl', '{"id": 3, "v": "c"}\n'))).code).toBe(0);
  });

  const lines = (text: string) =>
    text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));

  it('tail --from compacted-full starts at the latest compaction: its full state, then the changes after it', async () => {
    const r = await varve('tail', 'db.s', '--from', 'compacted-full');
    expect(r.code, r.err).toBe(0);
    expect(lines(r.out).map((c) => [c.snapshot, c.kind, c.row.id])).toEqual([
      [3, '+I', 1],
      [3, '+I', 2],
      [4, '+I', 3],
    ]);
    // The table option too.
    expect((await varve('alter', 'db.s', '--set', 'scan.mode=compacted-full')).code).toBe(0);
    // (after the alter's schema-change event line, the same three changes)
    expect(lines((await varve('tail', 'db.s')).out).filter((c) => c.kind !== undefined)).toHaveLength(3);
  });

  it('audit-log --incremental-between takes tags, times and the table option; read refuses the option clearly', async () => {
    expect((await varve('tag', 'db.s', 'create', 'start', '--snapshot', '1')).code).toBe(0);
    const byTag = await varve('audit-log', 'db.s', '--incremental-between', 'start,4', '--format', 'jsonl');
    expect(byTag.code, byTag.err).toBe(0);
    expect(lines(byTag.out).map((r) => r.id)).toEqual([2, 3]);
    const t1 = (await varve('sys', 'db.s', 'snapshots', '--format', 'jsonl')).out;
    const times = lines(t1).map((s) => s.commit_time);
    expect(
      times.every((t) => t !== undefined),
      t1,
    ).toBe(true);
    const byTime = await varve(
      'audit-log',
      'db.s',
      '--incremental-between-timestamp',
      `${times[0]},${times[3]}`,
      '--format',
      'jsonl',
    );
    expect(byTime.code, byTime.err).toBe(0);
    expect(lines(byTime.out).map((r) => r.id)).toEqual([2, 3]);
    expect((await varve('alter', 'db.s', '--set', 'incremental-between=start,4')).code).toBe(0);
    expect(lines((await varve('audit-log', 'db.s', '--format', 'jsonl')).out).map((r) => r.id)).toEqual([2, 3]);
    const read = await varve('read', 'db.s');
    expect(read.code).toBe(1);
    expect(read.err).toContain('db.s has the option incremental-between=start,4');
    expect(read.err).toContain('varve alter db.s --reset incremental-between');
  });
});

describe('AWS setup, as a user without it meets it', () => {
  const BIN = join(__dirname, '../../bin/varve.mjs');
  /** `varve` in a process of its own whose AWS environment is only `aws` (no profile files either). */
  const varveWithAws = (aws: Record<string, string>, ...args: string[]) => {
    const env: Record<string, string> = {
      AWS_CONFIG_FILE: join(dir, 'none'),
      AWS_SHARED_CREDENTIALS_FILE: join(dir, 'none'),
      ...aws,
    };
    for (const [k, v] of Object.entries(process.env))
      if (!k.startsWith('AWS_') && !k.startsWith('VARVE_') && v !== undefined) env[k] = v;
    const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', cwd: dir, env, timeout: 600_000 });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  const sdkNote = (err: string) => {
    // The SDK's 8-line Node-version warning never shows; under Node < 22 varve says it in one line.
    expect(err).not.toMatch(/NodeVersionSupportWarning|a\.co\/|--trace-warnings/);
    const notes = err.split('\n').filter((l) => l.startsWith('varve: note:'));
    expect(notes).toHaveLength(Number(process.versions.node.split('.')[0]) < 22 ? 1 : 0);
    for (const n of notes) expect(n).toMatch(/AWS SDK updates after January 2027 need Node ≥ 22/);
  };

  it('redrive without a region says to set AWS_REGION; on a local warehouse, that it needs the deployed one', async () => {
    const r = varveWithAws({}, 'redrive', 'shop.orders', '--queue', 'ingest');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(
      /^varve: redrive works on the table's SQS queues on AWS: no AWS region is configured: set AWS_REGION/m,
    );
    expect(r.err).not.toContain('unexpected error');
    sdkNote(r.err);
    const local = varveWithAws({}, 'redrive', 'shop.orders');
    expect(local.code).toBe(1);
    expect(local.err).toMatch(
      /shop\.orders is in the local warehouse file:\/\/.*no commit queue to redrive.*--warehouse s3:\/\/bucket\/prefix/,
    );
  });

  it('redrive without credentials names the variables to set', async () => {
    const r = varveWithAws({ AWS_REGION: 'eu-west-1' }, 'redrive', 'shop.orders', '--queue', 'split');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(
      /no AWS credentials were found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE/,
    );
  });

  it('an s3:// warehouse whose endpoint refuses connections says it cannot reach S3 there and what to check', async () => {
    const aws = {
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'x',
      AWS_SECRET_ACCESS_KEY: 'y',
      AWS_ENDPOINT_URL: 'http://127.0.0.1:1',
      AWS_MAX_ATTEMPTS: '1',
    };
    const r = varveWithAws(aws, '--warehouse', 's3://bucket/wh', 'tables');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(
      /cannot reach S3 at http:\/\/127\.0\.0\.1:1 \(ECONNREFUSED\): check that the server AWS_ENDPOINT_URL names is running/,
    );
    expect(r.err).not.toMatch(/unavailable or throttling/);
    sdkNote(r.err);
  });
});

describe('Parquet input written by pyarrow (test/cli/fixtures/make-pyarrow-inputs.py)', () => {
  const fixture = (name: string) => join(__dirname, 'fixtures', name);

  it('takes a valid 0-row file: nothing to write, not "lies outside the file"', async () => {
    expect((await varve('create', 'db.p', '--schema', 'id BIGINT, v STRING', '--primary-key', 'id')).code).toBe(0);
    const r = await varve('write', 'db.p', fixture('empty.parquet'));
    expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: '' });
    expect(r.out).toBe('nothing to write\n');
    expect((await varve('count', 'db.p')).out.trim()).toBe('0');
  });

  it('names a bad row as "row N (row group G)", not a line', async () => {
    expect((await varve('create', 'db.q', '--schema', 'id BIGINT, qty INT', '--primary-key', 'id')).code).toBe(0);
    const r = await varve('write', 'db.q', fixture('two-groups.parquet'));
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^varve: row 3 \(row group 1\), field "qty" \(INT\)/m);
    expect(r.err).not.toMatch(/line \d/);
    // With --skip-invalid, the rejects file says the same.
    const rejects = join(dir, 'rejects.jsonl');
    const skipped = await varve('write', 'db.q', fixture('two-groups.parquet'), '--skip-invalid', rejects);
    expect(skipped.code, skipped.err).toBe(0);
    expect(JSON.parse(readFileSync(rejects, 'utf8').trim()).reason).toMatch(/^row 3 \(row group 1\), field "qty"/);
    expect((await varve('count', 'db.q')).out.trim()).toBe('3');
  });
});
