/**
 * Predicates: parsing every operator and literal type, three-valued evaluation, pruning bounds,
 * and filtered reads that prune partitions and key ranges but filter value columns only after the
 * merge (an older version must never come back).
 */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { InvalidArgumentError } from '../../lib/errors.js';
import { tableToRows } from '../../lib/format/columns.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { RowKind } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { evalPredicate, formatPredicate, mayMatch, parsePredicate, type Predicate } from '../../lib/table/predicate.js';
import type { ReadExplain } from '../../lib/table/read-pruning.js';
import { readAuditLog } from '../../lib/table/audit-log.js';

const fields = parseSchemaText(
  'id BIGINT NOT NULL, dt DATE, ts TIMESTAMP(3), amt DECIMAL(10,2), f DOUBLE, ok BOOLEAN, s STRING, b BYTES, n INT',
);
const types = new Map(fields.map((f) => [f.name, f.type]));

describe('parsePredicate', () => {
  it('reads every operator and a literal of every type, in the column type', () => {
    const p = parsePredicate(
      "id = 9007199254740993 AND dt >= '2024-05-01' AND ts < '2024-05-01T10:00:00Z' AND amt <> 1.5 AND f <= -2.5e3 AND ok = TRUE " +
        "AND s IN ('a', 'it''s') AND b = 'AQI=' AND n NOT IN (1, 2) AND s IS NOT NULL AND NOT (n > 3 OR n IS NULL)",
      fields,
    );
    expect(p.kind).toBe('and');
    const args = (p as { args: Predicate[] }).args;
    expect(args[0]).toEqual({ kind: 'compare', op: '=', column: 'id', value: 9007199254740993n });
    expect(args[1]).toMatchObject({ op: '>=', value: 19844 });
    expect(args[2]).toMatchObject({ op: '<', value: 1714557600000n });
    expect(args[3]).toMatchObject({ op: '!=', value: '1.50' });
    expect(args[4]).toMatchObject({ op: '<=', value: -2500 });
    expect(args[5]).toMatchObject({ value: true });
    expect(args[6]).toEqual({ kind: 'in', column: 's', values: ['a', "it's"], negated: false });
    expect(args[7]).toMatchObject({ value: new Uint8Array([1, 2]) });
    expect(args[8]).toMatchObject({ kind: 'in', negated: true });
    expect(args[9]).toEqual({ kind: 'is-null', column: 's', negated: true });
    expect(args[10].kind).toBe('not');
    // The printed form reads back to the same tree.
    expect(parsePredicate(formatPredicate(p, types), fields)).toEqual(p);
  });

  it('says where and what is wrong', () => {
    expect(() => parsePredicate('nope = 1', fields)).toThrow(/position 1: unknown column "nope"/);
    expect(() => parsePredicate('n = ', fields)).toThrow(/expected a value for n/);
    expect(() => parsePredicate('s = abc', fields)).toThrow(/single quotes/);
    expect(() => parsePredicate("n = 'x'", fields)).toThrow(InvalidArgumentError);
    expect(() => parsePredicate('n = 1 n = 2', fields)).toThrow(/AND \/ OR/);
    expect(() => parsePredicate('(n = 1', fields)).toThrow(/expected "\)"/);
  });
});

describe('evalPredicate and mayMatch', () => {
  it('uses three-valued logic: comparisons with NULL are unknown, NOT unknown is unknown', () => {
    const p = parsePredicate('n > 1', fields);
    expect(evalPredicate(p, { n: null }, types)).toBeNull();
    expect(evalPredicate({ kind: 'not', arg: p }, { n: null }, types)).toBeNull();
    expect(evalPredicate(parsePredicate('n > 1 OR n IS NULL', fields), { n: null }, types)).toBe(true);
    expect(evalPredicate(parsePredicate('n NOT IN (1, NULL)', fields), { n: 5 }, types)).toBeNull();
    expect(evalPredicate(parsePredicate('n = NULL', fields), { n: null }, types)).toBeNull();
  });

  it('prunes only when no value within the bounds can match', () => {
    const b = new Map([['n', { min: 10, max: 20, mayBeNull: false, mayBeNonNull: true }]]);
    const may = (text: string) => mayMatch(parsePredicate(text, fields), b, types);
    expect(may('n = 15')).toBe(true);
    expect(may('n = 25')).toBe(false);
    expect(may('n < 10')).toBe(false);
    expect(may('n <= 10')).toBe(true);
    expect(may('NOT (n >= 10)')).toBe(false);
    expect(may('n IN (1, 2, 30)')).toBe(false);
    expect(may('n IS NULL')).toBe(false);
    expect(may("n = 25 OR s = 'x'")).toBe(true); // s has no bounds
    expect(may("n = 25 AND s = 'x'")).toBe(false);
  });
});

describe('filtered reads', () => {
  async function table() {
    const catalog = new FolderCatalog(new MemoryStore());
    return catalog.createTable('db.t', {
      fields: parseSchemaText('dt STRING NOT NULL, id INT NOT NULL, v INT, s STRING'),
      primaryKeys: ['dt', 'id'],
      partitionKeys: ['dt'],
      options: { bucket: '1' },
    });
  }

  it('a filter on a value column applies after the merge: an older matching version never comes back', async () => {
    const t = await table();
    await t.write([{ dt: 'a', id: 1, v: 1, s: 'old' }]);
    await t.write([{ dt: 'a', id: 1, v: 2, s: 'new' }]);
    await t.write([{ dt: 'a', id: 2, v: 1, s: 'x' }]);
    await t.write([{ dt: 'a', id: 2, v: null, s: null }], { kinds: [RowKind.DELETE] });
    expect(tableToRows(await t.read({ where: 'v = 1' }), t.schema.fields)).toEqual([]);
    expect(tableToRows(await t.read({ where: "s = 'new'" }), t.schema.fields)).toEqual([
      { dt: 'a', id: 1, v: 2, s: 'new' },
    ]);
    expect(await t.count({ where: 'v IS NOT NULL' })).toBe(1);
  });

  it('prunes partitions and file key ranges, reports it, and applies --limit after the filter', async () => {
    const t = await table();
    for (const dt of ['a', 'b', 'c']) {
      await t.write(Array.from({ length: 5 }, (_, i) => ({ dt, id: i, v: i * 10, s: `${dt}${i}` })));
      await t.write(Array.from({ length: 5 }, (_, i) => ({ dt, id: 100 + i, v: i, s: null })));
    }
    let e: ReadExplain | undefined;
    const rows = tableToRows(
      await t.read({ where: "dt IN ('a', 'b') AND id < 100 AND v >= 20", explain: (x) => (e = x) }),
      t.schema.fields,
    );
    expect(rows.map((r) => `${r.dt}${r.id}`)).toEqual(['a2', 'a3', 'a4', 'b2', 'b3', 'b4']);
    expect(e).toMatchObject({
      liveFiles: 6,
      skippedByPartition: 2,
      skippedByKeyRange: 2,
      filesRead: 2,
      mergedRows: 10,
      matchingRows: 6,
    });
    expect((await t.read({ where: 'id >= 100', limit: 3 })).numRows).toBe(3);
    expect(await t.count({ where: "dt = 'c' OR s IS NULL" })).toBe(10 + 5 + 5); // all of c, and the null s of a and b
    // The same predicate as a tree (TypeScript API): literals are coerced like JSON input.
    expect(
      await t.count({
        where: {
          kind: 'and',
          args: [
            { kind: 'compare', op: '=', column: 'dt', value: 'b' },
            { kind: 'in', column: 'id', values: [1, 2, 3] },
          ],
        },
      }),
    ).toBe(3);
    const log = await readAuditLog(t, { incrementalBetween: { from: 0, to: 6 }, where: "dt = 'b' AND v > 20" });
    expect(log.numRows).toBe(2);
  });
});
