/** Seeded random records and table layouts for the randomized merge tests. */
import { mergeConfig, type MergeConfig } from '../../lib/mergetree/merge-config.js';
import type { Row, TableSchema } from '../../lib/schema/types.js';
import type { Rng } from '../helpers/random.js';
import { naiveCompare } from './naive-merge.js';
import { schemaOf, type Rec } from './fixtures.js';

/** Two layouts: a BIGINT key, and a composite (STRING, INT) key with non-BMP characters. */
export const LAYOUTS: Record<string, TableSchema> = {
  bigint: schemaOf(['k BIGINT', 'v INT', 's STRING', 'd DOUBLE', 'c BIGINT', 'ts BIGINT'], ['k']),
  composite: schemaOf(['ks STRING', 'kn INT', 'v INT', 's STRING', 'd DOUBLE', 'c BIGINT', 'ts BIGINT'], ['ks', 'kn']),
};

/** An engine setup for the randomized tests, with the row kinds it may see. */
export interface Scenario {
  name: string;
  config: MergeConfig;
  kinds: number[];
}

export const SCENARIOS: Scenario[] = [
  { name: 'deduplicate', config: mergeConfig(), kinds: [0, 0, 0, 2, 1, 3] },
  { name: 'deduplicate ignore-delete', config: mergeConfig({ ignoreDelete: true }), kinds: [0, 0, 3, 1] },
  { name: 'deduplicate sequence.field', config: mergeConfig({ sequenceFields: ['ts'] }), kinds: [0, 0, 3] },
  {
    name: 'deduplicate sequence.field desc',
    config: mergeConfig({ sequenceFields: ['ts'], sequenceDescending: true }),
    kinds: [0, 3],
  },
  { name: 'first-row', config: mergeConfig({ engine: 'first-row' }), kinds: [0] },
  {
    name: 'first-row ignore-delete',
    config: mergeConfig({ engine: 'first-row', ignoreDelete: true }),
    kinds: [0, 0, 3, 1],
  },
  { name: 'partial-update', config: mergeConfig({ engine: 'partial-update' }), kinds: [0, 2] },
  {
    name: 'partial-update remove-record-on-delete',
    config: mergeConfig({ engine: 'partial-update', partialUpdateRemoveRecordOnDelete: true }),
    kinds: [0, 0, 3],
  },
  {
    name: 'aggregation',
    config: mergeConfig({
      engine: 'aggregation',
      aggregateFunctions: { v: 'sum', d: 'max', c: 'count', s: 'listagg' },
      ignoreRetract: ['d', 's'],
    }),
    kinds: [0, 0, 0, 1, 3, 2],
  },
  {
    name: 'aggregation first/last',
    config: mergeConfig({
      engine: 'aggregation',
      aggregateFunctions: { v: 'min', d: 'first_non_null_value', s: 'last_value' },
      ignoreRetract: ['v', 'd'],
    }),
    kinds: [0, 2, 3],
  },
];

const STRINGS = [
  '',
  'a',
  'b',
  'ab',
  '\u{1F600}',
  '\uFFFF',
  'é',
  'x\u0000y',
  'long-common-prefix-1',
  'long-common-prefix-2',
];

/** A random row of the layout for key number `key` (the key space is 0..keySpace-1). */
export function randomRow(schema: TableSchema, r: Rng, key: number): Row {
  const row: Row = {};
  const nullable = (v: Row[string]) => (r.chance(0.2) ? null : v);
  for (const f of schema.fields) {
    switch (f.name) {
      case 'k':
        row.k = BigInt(key) * 7919n - 500000n;
        break;
      case 'ks':
        row.ks = STRINGS[key % STRINGS.length];
        break;
      case 'kn':
        row.kn = Math.floor(key / STRINGS.length) - 5;
        break;
      case 'v':
        row.v = nullable(r.int(-1000, 1000));
        break;
      case 's':
        row.s = nullable(r.pick(STRINGS));
        break;
      case 'd':
        row.d = nullable(r.int(-100, 100) / 4);
        break;
      case 'c':
        row.c = nullable(BigInt(r.int(0, 5)));
        break;
      case 'ts':
        row.ts = nullable(BigInt(r.int(0, 20)));
        break;
    }
  }
  return row;
}

/**
 * Random sorted runs: each holds a random subset of keys (sorted, one record per key) with unique
 * absolute sequence numbers spread over all runs, so runs overlap in both keys and sequence.
 */
export function randomRuns(
  schema: TableSchema,
  scenario: Scenario,
  r: Rng,
  runCount: number,
  keySpace: number,
): Rec[][] {
  const runs: Rec[][] = [];
  for (let k = 0; k < runCount; k++) {
    const keys: number[] = [];
    const density = r.next();
    for (let key = 0; key < keySpace; key++) if (r.next() < density) keys.push(key);
    runs.push(keys.map((key) => ({ row: randomRow(schema, r, key), kind: r.pick(scenario.kinds), seq: 0 })));
  }
  const all = runs.flat();
  const seqs = all.map((_, i) => i);
  for (let i = seqs.length - 1; i > 0; i--) {
    const j = r.int(0, i);
    [seqs[i], seqs[j]] = [seqs[j], seqs[i]];
  }
  all.forEach((rec, i) => (rec.seq = seqs[i] + 1000));
  const fields = new Map(schema.fields.map((f) => [f.name, f]));
  const byKey = (a: Rec, b: Rec) => {
    for (const k of schema.primaryKeys) {
      const c = naiveCompare(fields.get(k)!, a.row[k], b.row[k]);
      if (c !== 0) return c;
    }
    return 0;
  };
  return runs.map((run) => run.sort(byKey));
}
