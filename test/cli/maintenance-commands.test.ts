/** `varve compact` against a folder warehouse: the one-line summary, filters and bad flags. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { formatCompactionSummary } from '../../lib/cli/commands/compact.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { openStore } from '../../lib/store/open-store.js';
import { runVarve, varveOk } from '../helpers/cli-process.js';

let warehouse: string;

/** `varve ...args` through the shared in-process runner: what it printed, which must exit 0. */
const varve = (...args: string[]): Promise<string> => varveOk(warehouse, args);

async function tableWithRuns(runs: number): Promise<void> {
  const table = await new FolderCatalog(openStore(warehouse)).createTable('db.t', {
    fields: parseSchemaText('id INT NOT NULL, region STRING NOT NULL, v BIGINT'),
    primaryKeys: ['region', 'id'],
    partitionKeys: ['region'],
    options: { 'write-only': 'true', bucket: '2' },
  });
  for (let i = 0; i < runs; i++) {
    await table.write(
      [1, 2, 3, 4].flatMap((id) => [
        { id, region: 'eu', v: BigInt(i) },
        { id, region: 'us', v: BigInt(i) },
      ]),
    );
  }
}

beforeEach(() => {
  warehouse = join(mkdtempSync(join(tmpdir(), 'varve-compact-')), 'wh');
});

describe('varve compact', () => {
  it('compacts every bucket that is due and prints one summary line', async () => {
    await tableWithRuns(5);
    const out = await varve('compact', 'db.t');
    expect(out).toMatch(
      /^db\.t: compacted 4 of 4 buckets, 20 files \(\d+(\.\d)? (B|KiB|MiB)\) -> 4 files .*, snapshot 6\n$/,
    );
    expect(await varve('compact', 'db.t')).toBe('db.t: nothing to compact (4 buckets checked)\n');
  });

  it('compact --full on a 3-bucket table makes one COMPACT snapshot covering every bucket', async () => {
    const table = await new FolderCatalog(openStore(warehouse)).createTable('db.t3', {
      fields: parseSchemaText('id INT NOT NULL, v BIGINT'),
      primaryKeys: ['id'],
      options: { 'write-only': 'true', bucket: '3' },
    });
    for (let i = 0; i < 2; i++) await table.write(Array.from({ length: 30 }, (_, id) => ({ id, v: BigInt(i) })));
    const before = (await table.snapshots.latestId())!;

    const out = await varve('compact', 'db.t3', '--full');

    expect(out).toMatch(/^db\.t3: compacted 3 of 3 buckets, 6 files .*, snapshot 3\n$/);
    const after = (await table.snapshots.latestId())!;
    expect(after - before).toBe(1);
    const s = await table.snapshots.read(after);
    expect(s.commitKind).toBe('COMPACT');
    // Every bucket's files are in the one snapshot: all three buckets now hold one top-level file.
    const live = await readLiveFiles(table.store, table.path, s);
    expect(new Set(live.map((e) => e.bucket))).toEqual(new Set([0, 1, 2]));
    expect(live.every((e) => e.file.level === table.options.numLevels - 1)).toBe(true);
  });

  it('compacts fully, and only the partition and bucket asked for', async () => {
    await tableWithRuns(2);
    expect(await varve('compact', 'db.t')).toMatch(/nothing to compact/);
    const out = await varve('compact', 'db.t', '--full', '--partition', 'region=us', '--bucket', '1');
    expect(out).toMatch(/^db\.t: compacted 1 of 1 buckets, 2 files/);
  });

  it('rejects a malformed partition spec with what to write instead', async () => {
    await tableWithRuns(1);
    const partition = await runVarve(warehouse, ['compact', 'db.t', '--partition', 'us']);
    expect(partition.code).toBe(1);
    expect(partition.err).toMatch(/^varve: .*key=value.*region=eu/);
    const bucket = await runVarve(warehouse, ['compact', 'db.t', '--bucket', 'x']);
    expect(bucket.code).toBe(1);
    expect(bucket.err).toMatch(/^varve: .*--bucket/);
  });
});

describe('formatCompactionSummary', () => {
  it('names leftover and contended buckets', () => {
    const line = formatCompactionSummary('db.t', {
      bucketsChecked: 5,
      bucketsCompacted: 2,
      remainingBuckets: 2,
      conflicts: 1,
      filesIn: 9,
      filesOut: 2,
      upgradedFiles: 1,
      bytesIn: 3 << 20,
      bytesOut: 1 << 20,
      changelogFiles: 2,
      changelogRows: 40,
      snapshots: [7],
    });
    expect(line).toBe(
      'db.t: compacted 2 of 5 buckets, 9 files (3.0 MiB) -> 2 files (1.0 MiB), 1 upgraded without rewrite, 40 changelog rows in 2 files, ' +
        'snapshot 7, 2 buckets left for the next run (--max-bytes reached), 1 buckets skipped: other compactions kept changing them, run again\n',
    );
  });
});
