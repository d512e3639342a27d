/**
 * Schema evolution by field id: alter adds, renames, drops and widens columns; old files are read
 * through the new schema; time travel reads each snapshot with its own schema; a writer that
 * planned before an alter fails with SchemaChangedError (Table.write retries under the new one);
 * compaction, merge engines and streams read across the change.
 */
import { describe, expect, it } from 'vitest';
import { OptionError, SchemaChangedError, SchemaError } from '../../lib/errors.js';
import { tableToRows } from '../../lib/format/columns.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import {
  applySchemaChanges,
  parseAddColumn,
  parseTypeChange,
  wideningProblem,
} from '../../lib/schema/schema-evolution.js';
import { readSplit } from '../../lib/stream/split.js';
import { StreamScan } from '../../lib/stream/stream-scan.js';
import type { Table } from '../../lib/table/table.js';
import { readAuditLog } from '../../lib/table/audit-log.js';
import { testTable } from '../helpers/tables.js';

function newTable(
  options: Record<string, string> = {},
  schema = 'id INT NOT NULL, qty INT, price FLOAT, name STRING, amt DECIMAL(5,2)',
): Promise<Table> {
  return testTable({ schema, primaryKeys: ['id'], options });
}

describe('applySchemaChanges', () => {
  const base = applySchemaChanges(
    {
      version: 1,
      id: 0,
      fields: parseSchemaText('id INT NOT NULL, a INT, b STRING'),
      highestFieldId: 2,
      partitionKeys: [],
      primaryKeys: ['id'],
      options: {},
      timeMillis: 0,
    },
    [{ kind: 'update-comment', comment: 'c' }],
  );

  it('adds with new ids (never reused after a drop), renames keep the id, AFTER places the column', () => {
    const s = applySchemaChanges(base, [
      { kind: 'drop-column', name: 'b' },
      parseAddColumn('b STRING'),
      parseAddColumn('c BIGINT AFTER id'),
    ]);
    expect(s.id).toBe(2);
    expect(s.fields.map((f) => `${f.name}:${f.id}`)).toEqual(['id:0', 'c:4', 'a:1', 'b:3']);
    const r = applySchemaChanges(s, [{ kind: 'rename-column', from: 'a', to: 'z' }]);
    expect(r.fields.find((f) => f.name === 'z')!.id).toBe(1);
    expect(r.highestFieldId).toBe(4);
  });

  it('refuses what old files could not be read through, with the reason', () => {
    expect(() => applySchemaChanges(base, [{ kind: 'drop-column', name: 'id' }])).toThrow(/key column/);
    expect(() => applySchemaChanges(base, [{ kind: 'rename-column', from: 'id', to: 'x' }])).toThrow(/key/);
    expect(() => applySchemaChanges(base, [parseAddColumn('x INT NOT NULL')])).toThrow(/nullable/);
    expect(() => applySchemaChanges(base, [parseTypeChange('a SMALLINT')])).toThrow(SchemaError);
    expect(() => applySchemaChanges(base, [parseTypeChange('b INT')])).toThrow(/only safe widenings/);
    expect(() => applySchemaChanges(base, [{ kind: 'set-option', key: 'bucket-key', value: 'a' }])).toThrow(
      /cannot change/,
    );
    expect(applySchemaChanges(base, [{ kind: 'set-option', key: 'bucket', value: '4' }]).options.bucket).toBe('4');
    expect(() => applySchemaChanges(base, [{ kind: 'set-option', key: 'merge-engine', value: 'first-row' }])).toThrow(
      OptionError,
    );
    expect(() => applySchemaChanges(base, [{ kind: 'set-option', key: 'no.such', value: '1' }])).toThrow(
      /unknown table option/,
    );
    expect(
      applySchemaChanges(base, [{ kind: 'set-option', key: 'snapshot.num-retained.min', value: '3' }]).options[
        'snapshot.num-retained.min'
      ],
    ).toBe('3');
  });

  it('widenings: integers up, FLOAT to DOUBLE, DECIMAL precision up at the same scale; VARCHAR(n) is STRING', () => {
    const t = (s: string) => parseTypeChange(`x ${s}`).type;
    expect(wideningProblem(t('INT'), t('BIGINT'))).toBeUndefined();
    expect(wideningProblem(t('TINYINT'), t('INT'))).toBeUndefined();
    expect(wideningProblem(t('FLOAT'), t('DOUBLE'))).toBeUndefined();
    expect(wideningProblem(t('DECIMAL(5,2)'), t('DECIMAL(10,2)'))).toBeUndefined();
    expect(wideningProblem(t('VARCHAR(5)'), t('VARCHAR(10)'))).toBeUndefined();
    expect(wideningProblem(t('DECIMAL(5,2)'), t('DECIMAL(10,3)'))).toMatch(/scale/);
    expect(wideningProblem(t('BIGINT'), t('INT'))).toMatch(/only widen/);
    expect(wideningProblem(t('DOUBLE'), t('FLOAT'))).toBeDefined();
  });
});

describe('alter on a table with data', () => {
  it('reads old files through the new schema by field id; time travel reads each snapshot with its own schema', async () => {
    const table = await newTable();
    const s1 = (
      await table.write([
        { id: 1, qty: 5, price: 1.5, name: 'a', amt: '1.25' },
        { id: 2, qty: 7, price: 2.5, name: 'b', amt: '2.50' },
      ])
    ).snapshot!;
    const altered = await table.alter([
      { kind: 'rename-column', from: 'name', to: 'label' },
      { kind: 'drop-column', name: 'price' },
      parseAddColumn('note STRING AFTER id'),
      parseTypeChange('qty BIGINT'),
      parseTypeChange('amt DECIMAL(12,2)'),
      { kind: 'update-comment', comment: 'orders' },
    ]);
    expect(altered.snapshot!.schemaId).toBe(1);
    expect(altered.schema.comment).toBe('orders');
    await altered.table.write([{ id: 3, note: 'n', qty: 10n ** 12n, label: 'c', amt: '1234567890.12' }]);

    const now = await table.read();
    expect(now.schema.names).toEqual(['id', 'note', 'qty', 'label', 'amt']);
    const latest = tableToRows(now, altered.schema.fields);
    expect(latest).toEqual([
      { id: 1, note: null, qty: 5n, label: 'a', amt: '1.25' },
      { id: 2, note: null, qty: 7n, label: 'b', amt: '2.50' },
      { id: 3, note: 'n', qty: 10n ** 12n, label: 'c', amt: '1234567890.12' },
    ]);
    // Time travel to before the alter: the old columns, the old values.
    const old = await table.read({ snapshotId: s1.id });
    expect(old.schema.names).toEqual(['id', 'qty', 'price', 'name', 'amt']);
    expect(tableToRows(old, table.schema.fields)[0]).toEqual({ id: 1, qty: 5, price: 1.5, name: 'a', amt: '1.25' });
    // Full compaction rewrites the old files under the new schema; the result is unchanged.
    const compacted = await compactTable(table, { full: true });
    expect(compacted.snapshots.length).toBe(1);
    expect(tableToRows(await table.read(), altered.schema.fields)).toEqual(latest);
    const files = await (await table.latest()).read({ keepDeletes: true });
    expect(files.numRows).toBe(3);
  });

  it('a writer that planned with the old schema fails with SchemaChangedError; Table.write retries under the new one', async () => {
    const table = await newTable();
    await table.write([{ id: 1, qty: 1, price: 1, name: 'a', amt: '1.00' }]);
    const writer = table.newWriter();
    await writer.write([{ id: 2, qty: 2, price: 2, name: 'b', amt: '2.00' }]);
    await table.alter([{ kind: 'rename-column', from: 'name', to: 'label' }]);
    const err = await writer.commit().catch((e) => e);
    expect(err).toBeInstanceOf(SchemaChangedError);
    expect(err.message).toMatch(/changed from 0 to 1.*reopen the table/);
    await writer.close();
    // The stale handle's one-call write maps the row by field id and lands under schema 1.
    const result = await table.write([{ id: 3, qty: 3, price: 3, name: 'c', amt: '3.00' }]);
    expect(result.snapshot!.schemaId).toBe(1);
    const latest = await table.latest();
    expect(tableToRows(await table.read(), latest.schema.fields).map((r) => [r.id, r.label])).toEqual([
      [1, 'a'],
      [3, 'c'],
    ]);
  });

  it('partial-update merges old and new files by id; a renamed column keeps its values', async () => {
    const table = await newTable({ 'merge-engine': 'partial-update' });
    await table.write([{ id: 1, qty: 1, price: null, name: 'a', amt: null }]);
    const { table: t2 } = await table.alter([
      { kind: 'rename-column', from: 'name', to: 'label' },
      parseAddColumn('extra STRING'),
    ]);
    await t2.write([{ id: 1, qty: null, price: 9, label: null, amt: null, extra: 'x' }]);
    expect(tableToRows(await table.read(), t2.schema.fields)).toEqual([
      { id: 1, qty: 1, price: 9, label: 'a', amt: null, extra: 'x' },
    ]);
  });

  it('a stream across the change reports it and emits later rows in the new schema; the audit log too', async () => {
    const table = await newTable();
    await table.write([{ id: 1, qty: 1, price: 1, name: 'a', amt: '1.00' }]);
    const scan = new StreamScan(table, { mode: 'earliest' });
    const first = await scan.plan();
    expect(first!.schemaChange).toBeUndefined();
    const { table: t2 } = await table.alter([parseAddColumn('extra STRING'), { kind: 'drop-column', name: 'price' }]);
    await t2.write([{ id: 2, qty: 2, name: 'b', amt: '2.00', extra: 'e' }]);
    const change = await scan.plan();
    expect(change!.schemaChange).toMatchObject({
      snapshot: 2,
      from: 0,
      to: 1,
      changes: ['drop column price', 'add column extra STRING'],
    });
    expect(change!.splits).toEqual([]);
    const next = await scan.plan();
    const data = await readSplit(scan.table, next!.splits[0]);
    expect(tableToRows(data, scan.table.schema.fields)).toEqual([
      { id: 2, qty: 2, name: 'b', amt: '2.00', extra: 'e' },
    ]);
    const log = await readAuditLog(table, { incrementalBetween: { from: 0, to: 3 } });
    expect(log.schema.names.slice(0, 5)).toEqual(['id', 'qty', 'name', 'amt', 'extra']);
    expect(log.numRows).toBe(2);
  });
});
