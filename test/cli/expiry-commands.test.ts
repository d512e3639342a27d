/** `varve expire` and `varve remove-orphans` against a folder warehouse: summaries, dry run, bad flags. */
import { mkdtempSync } from 'node:fs';
import { afterFloor } from '../helpers/expiry-clock.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../lib/store/open-store.js';
import { utf8 } from '../../lib/store/object-store.js';
import type { Table } from '../../lib/table/table.js';
import { runVarve, varveOk } from '../helpers/cli-process.js';
import { addConsumer, eightSnapshots, newTable } from '../maintenance/expiry-fixtures.js';

let warehouse: string;

/** `varve ...args` through the shared in-process runner: what it printed, which must exit 0. */
const varve = (...args: string[]): Promise<string> => varveOk(warehouse, args);

/** `varve ...args`, which must fail as a usage error (exit 1, `varve: <message>` on stderr): that message. */
async function refused(...args: string[]): Promise<string> {
  const r = await runVarve(warehouse, args);
  expect(r.code, r.err).toBe(1);
  expect(r.err).toMatch(/^varve: /);
  return r.err;
}

async function folderTable(options: Record<string, string> = {}): Promise<Table> {
  return newTable(options, openStore(warehouse));
}

beforeEach(() => {
  warehouse = mkdtempSync(join(tmpdir(), 'varve-expiry-cli-'));
});

describe('varve expire / remove-orphans', () => {
  it('expire prints what it expired and deleted, and what remains', async () => {
    // Prepare
    const table = await folderTable();
    await eightSnapshots(table);
    // Act
    const out = await afterFloor(() => varve('expire', 'db.t', '--retain-min', '2', '--older-than', '0 ms'));
    // Assess
    expect(out).toMatch(
      /^db\.t: expired snapshots 1\.\.6, deleted \d+ files \(\d+ data, 0 changelog, \d+ manifests, \d+ manifest lists\); snapshots 7\.\.8 remain\n$/,
    );
    expect(await table.snapshots.earliestId()).toBe(7);
  });

  it('expire names the consumer holding it back and hints at consumer.expiration-time', async () => {
    // Prepare
    const table = await folderTable();
    await eightSnapshots(table);
    await addConsumer(table, 'dashboard', 5);
    // Act
    const out = await afterFloor(() => varve('expire', 'db.t', '--retain-min', '1', '--older-than', '0'));
    // Assess
    expect(out).toContain('expired snapshots 1..4');
    expect(out).toContain('held back by consumer dashboard, which still needs snapshot 5');
    expect(out).toContain('hint: consumers never expire on this table; set the option consumer.expiration-time');
    expect(out.split('\n').length).toBe(2);
  });

  it('remove-orphans --dry-run lists the files and deletes nothing; without it, deletes them', async () => {
    // Prepare
    const table = await folderTable();
    await eightSnapshots(table);
    const junk = `${table.path}/bucket-1/data-from-a-crashed-writer.parquet`;
    await table.store.put(junk, utf8('junk'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Act
    const young = await varve('remove-orphans', 'db.t');
    const dry = await varve('remove-orphans', 'db.t', '--older-than', '10 ms', '--dry-run');
    const stillThere = await table.store.head(junk);
    const real = await varve('remove-orphans', 'db.t', '--older-than', '10 ms');
    // Assess
    expect(young).toBe('db.t: removed 0 orphan files (0 B) older than 1 d; 1 newer unreferenced files left alone\n');
    expect(dry.split('\n')[0]).toBe('db.t: would remove 1 orphan files (4 B) older than 10 ms');
    expect(dry).toContain(`  data\t${junk}\t4 B\t`);
    expect(stillThere).toBeDefined();
    expect(real).toBe('db.t: removed 1 orphan files (4 B) older than 10 ms\n');
    expect(await table.store.head(junk)).toBeUndefined();
  });

  it('remove-orphans --max-keys lists a bounded slice per run and resumes where the last run stopped; --journal lists no table files', async () => {
    // Prepare: a folder table and two stray files far apart in key order
    const table = await folderTable();
    await eightSnapshots(table);
    const junk = [`${table.path}/bucket-0/data-stray.parquet`, `${table.path}/manifest/manifest-stray`];
    for (const k of junk) await table.store.put(k, utf8('junk'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Act
    const journal = await varve('remove-orphans', 'db.t', '--older-than', '10 ms', '--journal');
    const runs: string[] = [];
    for (let i = 0; i < 40 && !runs.some((r) => r.includes('reached the end')); i++)
      runs.push(await varve('remove-orphans', 'db.t', '--older-than', '10 ms', '--max-keys', '5'));
    // Assess
    expect(journal).toBe(
      'db.t: removed 0 orphan files (0 B) older than 10 ms; looked at 0 files of expired pending registrations\n',
    );
    expect(runs.length).toBeGreaterThan(2);
    expect(runs[0]).toMatch(/; listed 5 keys, run again to resume after db\.db\/t\//);
    expect(runs.join('')).toMatch(/the scan reached the end of the table \(\d+ keys this cycle\)/);
    expect(runs.reduce((n, r) => n + Number(/removed (\d+) orphan/.exec(r)![1]), 0)).toBe(2);
    for (const k of junk) expect(await table.store.head(k)).toBeUndefined();
    expect(await refused('remove-orphans', 'db.t', '--max-keys', '0')).toMatch(
      /--max-keys must be a whole number of 1 or more/,
    );
  });

  it('rejects a duration it cannot read, naming the flag', async () => {
    // Prepare
    await folderTable();
    // Act
    const run = await refused('expire', 'db.t', '--older-than', 'soon');
    // Assess
    expect(run).toMatch(/--older-than "soon" is not a duration/);
    expect(await refused('remove-orphans', 'db.t', '--older-than', 'a while')).toMatch(
      /--older-than "a while" is not a duration/,
    );
  });
});
