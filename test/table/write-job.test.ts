/**
 * runWriteJob, the write orchestration `varve write` runs, called as a library user would: a
 * stream read once and spooled, planned again under the new schema when an alter lands mid-write;
 * invalid records skipped to a rejects file; an input without a valid record commits nothing.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openCatalog } from '../../lib/catalog/open-catalog.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { parseAddColumn } from '../../lib/schema/schema-evolution.js';
import type { TableSchema } from '../../lib/schema/types.js';
import { runWriteJob } from '../../lib/table/write-job.js';

async function newTable() {
  const dir = mkdtempSync(join(tmpdir(), 'varve-write-job-'));
  const table = await openCatalog(join(dir, 'wh')).createTable('db.t', {
    fields: parseSchemaText('id BIGINT, v STRING'),
    primaryKeys: ['id'],
  });
  return { dir, table };
}

const bytes = (text: string) => new TextEncoder().encode(text);

describe('runWriteJob', () => {
  it('spools a stream and writes it again under the new schema when an alter lands during the write', async () => {
    const { table } = await newTable();
    const handle = await table.latest();
    // The alter lands after the first line was read: the attempt planned under schema 0 cannot commit.
    async function* input(): AsyncGenerator<Uint8Array> {
      yield bytes('{"id": 1, "v": "a"}\n');
      await handle.alter([parseAddColumn('n INT')]);
      yield bytes('{"id": 2, "v": "b"}\n');
    }
    const changes: Array<[number, number]> = [];
    const result = await runWriteJob(
      table,
      { stream: input() },
      { format: 'jsonl', onSchemaChange: (from: TableSchema, to: TableSchema) => changes.push([from.id, to.id]) },
    );
    expect(changes).toEqual([[0, 1]]);
    expect(result.records).toBe(2);
    expect(result.table.schema.id).toBe(1);
    expect(result.commit?.rows).toBe(2);
    const rows = (await (await table.latest()).read()).toArray().map((r) => ({ id: r.id, v: r.v, n: r.n }));
    expect(rows).toEqual([
      { id: 1n, v: 'a', n: null },
      { id: 2n, v: 'b', n: null },
    ]);
  });

  it('skips invalid records to the rejects file, and commits nothing when no record is valid', async () => {
    const { dir, table } = await newTable();
    const file = join(dir, 'in.jsonl');
    writeFileSync(file, '{"id": 1, "v": "a"}\n{"id": "x"}\n');
    const rejectsFile = join(dir, 'rejects.jsonl');
    const first = await runWriteJob(table, { file }, { format: 'jsonl', rejectsFile });
    expect([first.records, first.rejected, first.commit?.snapshot?.id]).toEqual([1, 1, 1]);
    expect(JSON.parse(readFileSync(rejectsFile, 'utf8').trim())).toMatchObject({ line: 2, raw: '{"id": "x"}' });

    writeFileSync(file, '{"id": "y"}\n');
    const none = await runWriteJob(table, { file }, { format: 'jsonl', rejectsFile });
    expect([none.records, none.rejected, none.commit]).toEqual([0, 1, undefined]);
    expect(await table.snapshots.latestId()).toBe(1);
  });
});
