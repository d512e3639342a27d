/**
 * The exported Iceberg table read by an independent reader (test/iceberg/read_iceberg.py:
 * fastavro + pyarrow, following the Iceberg spec, no varve code) returns exactly the rows
 * `varve read` returns at the exported snapshot, over a randomized workload of upserts and
 * deletes into two typed partition keys, with inline and full compactions, for every column type.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { tableToRows } from '../../lib/format/columns.js';
import { icebergLocation } from '../../lib/iceberg/iceberg-metadata.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { unscaledDecimalText } from '../../lib/schema/decimal-text.js';
import type { DataField, Row, Value } from '../../lib/schema/types.js';
import { LocalStore } from '../../lib/store/local-store.js';
import type { Table } from '../../lib/table/table.js';
import { randomValue } from '../format/fixtures.js';
import { pythonWithPyarrow, runPython } from '../helpers/python-env.js';
import { rng, testSeed } from '../helpers/random.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function f(
  id: number,
  name: string,
  root: DataField['type']['root'],
  extra: Partial<DataField['type']> = {},
): DataField {
  return { id, name, type: { root, nullable: true, ...extra } };
}

/** Every column type; the key is (p, pd, id) and the table is partitioned by p (STRING) and pd (DATE). */
const FIELDS: DataField[] = [
  f(1, 'p', 'STRING', { nullable: false }),
  f(2, 'pd', 'DATE', { nullable: false }),
  f(3, 'id', 'INT', { nullable: false }),
  f(4, 'b', 'BOOLEAN'),
  f(5, 'i8', 'TINYINT'),
  f(6, 'i16', 'SMALLINT'),
  f(7, 'i32', 'INT'),
  f(8, 'i64', 'BIGINT'),
  f(9, 'f32', 'FLOAT'),
  f(10, 'f64', 'DOUBLE'),
  f(11, 'dec38', 'DECIMAL', { precision: 38, scale: 10 }),
  f(12, 'dec9', 'DECIMAL', { precision: 9, scale: 2 }),
  f(13, 's', 'STRING'),
  f(14, 'bin', 'BYTES'),
  f(15, 'day', 'DATE'),
  f(16, 'ts3', 'TIMESTAMP', { precision: 3 }),
  f(17, 'ts6', 'TIMESTAMP', { precision: 6 }),
];

/** The reader's canonical text of a varve value (see read_iceberg.py). */
function canonical(field: DataField, v: Value): string | null {
  if (v === null) return null;
  const t = field.type;
  switch (t.root) {
    case 'BOOLEAN':
      return v ? 'true' : 'false';
    case 'FLOAT':
    case 'DOUBLE': {
      if (Number.isNaN(v as number)) return 'NaN';
      const view = new DataView(new ArrayBuffer(8));
      view.setFloat64(0, v as number);
      return Buffer.from(view.buffer).toString('hex');
    }
    case 'DECIMAL':
      return unscaledDecimalText(v as string, t.scale ?? 0);
    case 'BYTES':
      return Buffer.from(v as Uint8Array).toString('hex');
    case 'TIMESTAMP':
      return String(t.precision === 6 ? (v as bigint) : (v as bigint) * 1000n);
    default:
      return String(v);
  }
}

function sortedRows(rows: Array<Record<string, string | null>>): string[] {
  return rows.map((r) => JSON.stringify(FIELDS.map((fl) => r[fl.name]))).sort();
}

async function varveRows(table: Table, snapshotId: number): Promise<string[]> {
  const rows = tableToRows(await table.read({ snapshotId }), table.schema.fields);
  return sortedRows(rows.map((r) => Object.fromEntries(FIELDS.map((fl) => [fl.name, canonical(fl, r[fl.name])]))));
}

function icebergRows(python: string, table: Table): { snapshot: number; files: number; rows: string[] } {
  const loc = icebergLocation(table)!;
  const out = JSON.parse(
    runPython(python, 'test/iceberg/read_iceberg.py', [join((table.store as LocalStore).root, loc.metadataDir)]),
  );
  return { snapshot: out.snapshot, files: out.files, rows: sortedRows(out.rows) };
}

describe('Iceberg export read by fastavro + pyarrow', () => {
  const env = pythonWithPyarrow();
  const skip = 'unavailable' in env;
  if (skip) console.warn(`SKIPPED the independent Iceberg reader test: ${env.unavailable} (under CI=true this fails)`);

  it.skipIf(skip)(
    'returns the rows of `varve read` at the exported snapshot, after every full compaction',
    { timeout: 300_000 },
    async () => {
      // Prepare
      const python = (env as { python: string }).python;
      const seed = testSeed('iceberg.export-reader');
      const r = rng(seed);
      const dir = mkdtempSync(join(tmpdir(), 'varve-iceberg-'));
      dirs.push(dir);
      const catalog = new FolderCatalog(new LocalStore(dir));
      const table = await catalog.createTable('db.all_types', {
        fields: FIELDS,
        primaryKeys: ['p', 'pd', 'id'],
        partitionKeys: ['p', 'pd'],
        options: {
          'metadata.iceberg.storage': 'table-location',
          bucket: '2',
          'num-sorted-run.compaction-trigger': '3',
        },
      });
      const partitions: Array<[string, number]> = [
        ['eu', 0],
        ['us/west', -1],
        ['ünï=x', 19000],
      ];
      let checks = 0;
      // Act + Assess
      for (let round = 0; round < 8; round++) {
        const rows: Row[] = [];
        const kinds: number[] = [];
        for (let i = 0; i < 30; i++) {
          const [p, pd] = r.pick(partitions);
          const row: Row = { p, pd, id: r.int(0, 40) };
          const del = r.chance(0.2);
          for (const fl of FIELDS.slice(3)) row[fl.name] = del ? null : randomValue(r, fl);
          rows.push(row);
          kinds.push(del ? 3 : r.pick([0, 2]));
        }
        const w = await table.write(rows, { kinds });
        expect(w.compactionError).toBeUndefined();
        if (round % 3 === 2 || round === 7) {
          const c = await compactTable(table, { full: true });
          expect(c.icebergExportError).toBeUndefined();
          const latest = (await table.snapshots.latest())!;
          const ice = icebergRows(python, table);
          expect(ice.snapshot).toBe(latest.id);
          expect(ice.rows).toEqual(await varveRows(table, latest.id));
          expect(ice.rows.length).toBeGreaterThan(0);
          checks++;
        }
      }
      expect(checks).toBe(3);
    },
  );
});
