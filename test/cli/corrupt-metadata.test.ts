/**
 * A damaged metadata file is named, never returned as data nor a TypeError: `varve` (a separate OS
 * process) exits non-zero with a message naming the file by its full path and what was wrong.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { runVarve, varveProcess } from '../helpers/cli-process.js';

let dir: string;
let warehouse: string;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'varve-corrupt-'));
  warehouse = join(dir, 'wh');
  expect(
    (await runVarve(warehouse, ['create', 'db.t', '--schema', 'id BIGINT, v STRING', '--primary-key', 'id'])).code,
  ).toBe(0);
  const input = join(dir, 'in.jsonl');
  writeFileSync(input, '{"id":1,"v":"a"}\n{"id":2,"v":"b"}\n');
  expect((await runVarve(warehouse, ['write', 'db.t', input])).code).toBe(0);
  expect((await runVarve(warehouse, ['write', 'db.t', input])).code).toBe(0);
});

describe('damaged metadata files on the command line', () => {
  it('read: a snapshot file holding null exits non-zero naming the file', () => {
    const file = join(warehouse, 'db.db', 't', 'snapshot', 'snapshot-2');
    writeFileSync(file, 'null');
    const r = varveProcess(warehouse, ['read', 'db.t']);
    expect(r.code).not.toBe(0);
    expect(r.out).toBe('');
    expect(r.err).toContain(`snapshot file ${file} is damaged: the top level: expected Object, got null`);
    expect(r.err).not.toMatch(/Cannot read properties|TypeError/);
  });

  it('tail --consumer-id: a consumer file of the wrong shape exits non-zero naming the file and the field', async () => {
    // Prepare: the consumer exists and has read everything
    expect((await runVarve(warehouse, ['tail', 'db.t', '--consumer-id', 'c1', '--from', 'earliest'])).code).toBe(0);
    const file = join(warehouse, 'db.db', 't', 'consumer', 'consumer-c1');
    for (const [body, wrong] of [
      ['{"nextSnapshot": 3, "buckets": 7}', 'buckets: expected Object, got 7'],
      ['null', 'the top level: expected Object, got null'],
    ]) {
      writeFileSync(file, body);
      // Act
      const r = varveProcess(warehouse, ['tail', 'db.t', '--consumer-id', 'c1']);
      // Assess
      expect(r.code, body).not.toBe(0);
      expect(r.err, body).toContain(`${file} is damaged: ${wrong}`);
      expect(r.err, body).not.toMatch(/Cannot read properties|TypeError/);
    }
  });
});
