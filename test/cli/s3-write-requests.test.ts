/**
 * The AWS requests of a cold `varve write` to S3 (issue 32): the real CLI path in a fresh process
 * (test/cli/fixtures/count-aws-requests.ts, caches empty) against a 2-bucket table with history, on
 * moto. Counted by class: no LIST (the latest schema is found by probing schema ids, the latest
 * snapshot from the LATEST hint), each object read at most once (the write's plan and its commit
 * share one caching snapshot manager), three metadata PUTs (manifest, manifest list, snapshot: the
 * LATEST hint is written only when the lookup found it behind), one PUT per data file.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../lib/cli/main.js';
import { awsAvailable, freshBucket } from '../helpers/aws.js';

const ROOT = join(__dirname, '../..');

interface Request {
  service: string;
  command: string;
  key: string;
}

/** `varve --warehouse wh ...args` in a fresh process; its exit code, output and requests. */
function coldVarve(dir: string, wh: string, args: string[]): { code: number; out: string; requests: Request[] } {
  const log = join(dir, `requests-${Math.random().toString(36).slice(2)}.jsonl`);
  writeFileSync(log, '');
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'test/cli/fixtures/count-aws-requests.ts'), '--warehouse', wh, ...args],
    { cwd: ROOT, encoding: 'utf8', env: { ...process.env, VARVE_REQUEST_LOG: log }, timeout: 600_000 },
  );
  const requests = readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Request);
  return { code: r.status ?? -1, out: r.stdout + r.stderr, requests };
}

/** Requests per `COMMAND key-kind` and per key, for the assertions and the failure message. */
function describeRequests(requests: Request[]): string {
  return requests.map((r) => `${r.command} ${r.key.replace(/^.*?\/t\//, '')}`).join('\n');
}

describe.skipIf(!awsAvailable())('a cold varve write to S3 (moto)', () => {
  it('makes no LIST, reads each object once, PUTs 3 metadata objects and one per data file', async () => {
    // Prepare: a 2-bucket table with a commit in its history (written in this process)
    const dir = mkdtempSync(join(tmpdir(), 'varve-s3-requests-'));
    const wh = `s3://${await freshBucket()}/wh`;
    const cli = (...args: string[]) => runCli(['--warehouse', wh, ...args], { out: () => {}, err: () => {} });
    expect(
      await cli('create', 'db.t', '--schema', 'id BIGINT, v STRING', '--primary-key', 'id', '-o', 'bucket=2'),
    ).toBe(0);
    const rows = (from: number) =>
      Array.from({ length: 20 }, (_, i) => JSON.stringify({ id: from + i, v: `v${from + i}` })).join('\n') + '\n';
    writeFileSync(join(dir, 'history.jsonl'), rows(0));
    expect(await cli('write', 'db.t', join(dir, 'history.jsonl'))).toBe(0);
    writeFileSync(join(dir, 'new.jsonl'), rows(10));

    // Act
    const w = coldVarve(dir, wh, ['write', 'db.t', join(dir, 'new.jsonl')]);

    // Assess
    expect(w.code, w.out).toBe(0);
    expect(w.out).toMatch(/wrote 20 rows in 2 files, snapshot 2/);
    const s3 = w.requests.filter((r) => r.service === 'S3');
    const shown = describeRequests(s3);
    console.log(`cold varve write, 20 rows into 2 buckets: ${s3.length} S3 requests\n${shown}`);
    expect(w.requests.length - s3.length, shown).toBe(0);
    expect(
      s3.filter((r) => r.command.startsWith('List')),
      shown,
    ).toEqual([]);
    for (const command of ['GetObject', 'HeadObject']) {
      const keys = s3.filter((r) => r.command === command).map((r) => r.key);
      expect(keys.length, `${command} of a key twice:\n${shown}`).toBe(new Set(keys).size);
    }
    const puts = s3.filter((r) => r.command.startsWith('PutObject'));
    const data = puts.filter((r) => /\/bucket-\d+\/data-/.test(r.key));
    const metadata = puts.filter((r) => !data.includes(r));
    expect(data, shown).toHaveLength(2);
    expect(
      metadata
        .map((r) => r.key.replace(/^.*\/t\/(manifest\/manifest-list|manifest\/manifest|snapshot\/snapshot-2).*$/, '$1'))
        .sort(),
      shown,
    ).toEqual(['manifest/manifest', 'manifest/manifest-list', 'snapshot/snapshot-2']);
    // At most one HEAD of snapshot-1 (the commit's check below) and one request in all per key.
    expect(s3.length, shown).toBe(new Set(s3.map((r) => `${r.command} ${r.key}`)).size);
    // 12: the 3 + 2 PUTs, schema-0 and a HEAD of schema-1, LATEST, snapshot-1 and a HEAD of
    // snapshot-2, the manifest list and the one manifest of snapshot 1. One more when the commit
    // starts over a second after the lookup: it checks its base still exists (a HEAD of
    // snapshot-1) rather than risk re-creating an expired id (lib/snapshot/commit-steps.ts).
    const recheck = s3.filter((r) => r.command === 'HeadObject' && r.key.endsWith('/snapshot/snapshot-1')).length;
    expect(s3.length, shown).toBeLessThanOrEqual(12 + recheck);
  });
});
