/**
 * A deliberately simple, row-object model of the merge engines, written from the Paimon semantics
 * independently of lib/mergetree, for randomized comparison. It supports the subset the randomized
 * tests use: deduplicate, first-row, partial-update without sequence groups, and aggregation with
 * sum, max, min, last_non_null_value, last_value, first_non_null_value, listagg, count.
 */
import type { MergeConfig } from '../../lib/mergetree/merge-config.js';
import type { DataField, Row, TableSchema, Value } from '../../lib/schema/types.js';
import type { Rec } from './fixtures.js';

const isRetract = (k: number) => k === 1 || k === 3;

/** Column types whose values are integers held as JS numbers. */
const INTEGER_ROOTS = new Set(['TINYINT', 'SMALLINT', 'INT', 'INTEGER']);

/** Orders two values of one column: NULL first, strings by code point, numbers and bigints numerically. */
export function naiveCompare(f: DataField, a: Value, b: Value): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? -1 : 1;
  if (f.type.root === 'DECIMAL') {
    const x = unscaled(a as string, f.type.scale ?? 0),
      y = unscaled(b as string, f.type.scale ?? 0);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (typeof a === 'string') return Buffer.compare(Buffer.from(a), Buffer.from(b as string));
  if (a instanceof Uint8Array) return Buffer.compare(Buffer.from(a), Buffer.from(b as Uint8Array));
  return a < b ? -1 : a > b ? 1 : 0;
}

function unscaled(text: string, scale: number): bigint {
  const [i, f = ''] = text.split('.');
  return BigInt(i + f.padEnd(scale, '0'));
}

function keyOf(schema: TableSchema, row: Row): string {
  return JSON.stringify(schema.primaryKeys.map((k) => String(row[k])));
}

/** Merges records (any order, unique seqs) per key; `raw` = records are write input. */
export function naiveMerge(
  schema: TableSchema,
  cfg: MergeConfig,
  recs: Rec[],
  opts: { raw: boolean; dropDeletes: boolean; keepKinds?: boolean },
): Rec[] {
  const fields = new Map(schema.fields.map((f) => [f.name, f]));
  const groups = new Map<string, Rec[]>();
  for (const r of recs) {
    const k = keyOf(schema, r.row);
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  const versionOrder = (a: Rec, b: Rec) => {
    for (const s of cfg.sequenceFields) {
      const c = naiveCompare(fields.get(s)!, a.row[s], b.row[s]);
      if (c !== 0) return cfg.sequenceDescending ? -c : c;
    }
    return a.seq - b.seq;
  };
  const out: Rec[] = [];
  for (const g of groups.values()) {
    g.sort(versionOrder);
    const merged = mergeGroup(schema, cfg, g, opts.raw);
    if (merged === null) continue;
    if (opts.dropDeletes && isRetract(merged.kind)) continue;
    out.push(opts.dropDeletes && !opts.keepKinds ? { ...merged, kind: 0 } : merged);
  }
  const keyCompare = (a: Rec, b: Rec) => {
    for (const k of schema.primaryKeys) {
      const c = naiveCompare(fields.get(k)!, a.row[k], b.row[k]);
      if (c !== 0) return c;
    }
    return 0;
  };
  return out.sort(keyCompare);
}

function mergeGroup(schema: TableSchema, cfg: MergeConfig, g: Rec[], raw: boolean): Rec | null {
  switch (cfg.engine) {
    case 'deduplicate': {
      const live = cfg.ignoreDelete ? g.filter((r) => !isRetract(r.kind)) : g;
      return live.length ? live[live.length - 1] : null;
    }
    case 'first-row': {
      if (!cfg.ignoreDelete && g.some((r) => isRetract(r.kind))) throw new Error('first-row retract');
      return g.find((r) => !isRetract(r.kind)) ?? null;
    }
    case 'partial-update':
      return partialUpdate(schema, cfg, g);
    case 'aggregation':
      return aggregate(schema, cfg, g, raw);
  }
}

function partialUpdate(schema: TableSchema, cfg: MergeConfig, g: Rec[]): Rec | null {
  let row: Row = {};
  let latest: Rec | null = null;
  let meetInsert = false;
  let deleted = false;
  const keysOnly = (r: Rec) => Object.fromEntries(schema.primaryKeys.map((k) => [k, r.row[k]]));
  for (const r of g) {
    deleted = false;
    if (isRetract(r.kind)) {
      if (!meetInsert && latest === null) row = keysOnly(r);
      if (cfg.ignoreDelete) continue;
      latest = r;
      if (!cfg.partialUpdateRemoveRecordOnDelete) throw new Error('partial-update retract');
      if (r.kind === 3) {
        deleted = true;
        row = keysOnly(r);
      }
      continue;
    }
    latest = r;
    for (const f of schema.fields) if (r.row[f.name] !== null) row[f.name] = r.row[f.name];
    meetInsert = true;
  }
  if (latest === null) return null;
  const full = Object.fromEntries(schema.fields.map((f) => [f.name, row[f.name] ?? null]));
  return { row: full, kind: deleted || !meetInsert ? 3 : 0, seq: latest.seq };
}

function aggregate(schema: TableSchema, cfg: MergeConfig, g: Rec[], raw: boolean): Rec | null {
  const fnOf = (f: DataField) =>
    schema.primaryKeys.includes(f.name) || cfg.sequenceFields.includes(f.name)
      ? 'keep'
      : (cfg.aggregateFunctions[f.name] ?? cfg.defaultAggregateFunction ?? 'last_non_null_value');
  const countOf = (v: Value): number => (v === null ? 0 : 1);
  const asType = (f: DataField, n: number) => (f.type.root === 'BIGINT' ? BigInt(n) : n);
  if (g.length === 1) {
    const r = g[0];
    if (cfg.ignoreDelete && isRetract(r.kind)) return null;
    const row = { ...r.row };
    for (const f of schema.fields) if (raw && fnOf(f) === 'count') row[f.name] = asType(f, countOf(r.row[f.name]));
    return { row, kind: r.kind, seq: r.seq };
  }
  const acc: Row = Object.fromEntries(schema.fields.map((f) => [f.name, null]));
  const seen = new Set<string>();
  let latest: Rec | null = null;
  for (const r of g) {
    if (cfg.ignoreDelete && isRetract(r.kind)) continue;
    latest = r;
    const retract = isRetract(r.kind);
    for (const f of schema.fields) {
      const v = r.row[f.name];
      const a = acc[f.name];
      const fn = fnOf(f);
      if (
        retract &&
        !['keep', 'sum', 'count', 'last_value', 'last_non_null_value'].includes(fn) &&
        !cfg.ignoreRetract.includes(f.name)
      ) {
        throw new Error(`${fn} retract`);
      }
      if (retract && cfg.ignoreRetract.includes(f.name)) continue;
      switch (fn) {
        case 'keep':
          acc[f.name] = v;
          break;
        case 'last_value':
          acc[f.name] = retract ? null : v;
          break;
        case 'last_non_null_value':
          if (v !== null) acc[f.name] = retract ? null : v;
          break;
        case 'first_non_null_value':
          if (!seen.has(f.name) && v !== null) {
            acc[f.name] = v;
            seen.add(f.name);
          }
          break;
        case 'max':
        case 'min':
          if (v !== null && (a === null || (fn === 'max' ? naiveCompare(f, v, a) > 0 : naiveCompare(f, v, a) < 0)))
            acc[f.name] = v;
          break;
        case 'listagg':
          if (v !== null && (v as string).trim() !== '')
            acc[f.name] =
              a === null || (a as string).trim() === '' ? v : `${a}${cfg.listaggDelimiters[f.name] ?? ','}${v}`;
          break;
        case 'sum':
        case 'count': {
          const x = fn === 'count' && raw ? asType(f, countOf(v)) : v;
          if (x === null) break;
          // An integer column has no -0 (Arrow stores 0): `-0 + 0` is +0.
          const signed = retract
            ? typeof x === 'bigint'
              ? -x
              : INTEGER_ROOTS.has(f.type.root)
                ? -(x as number) + 0
                : -(x as number)
            : x;
          acc[f.name] =
            a === null ? signed : typeof a === 'bigint' ? a + (signed as bigint) : (a as number) + (signed as number);
          break;
        }
        default:
          throw new Error(`naive model lacks ${fn}`);
      }
    }
  }
  if (latest === null) return null;
  return { row: acc, kind: 0, seq: latest.seq };
}
