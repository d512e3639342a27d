/**
 * Deletion vectors change nothing a stream reads: the same seeded writes and compactions on a
 * table with and one without `deletion-vectors.enabled` (changelog-producer none and lookup)
 * give, snapshot by snapshot, the same commit kinds, the same changelog rows and the same
 * level-0 delta rows (what a following stream reads), system columns included.
 */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { tableToRows } from '../../lib/format/columns.js';
import { readChangelogFiles, readDeltaEntries } from '../../lib/manifest/scan.js';
import type { ManifestEntry } from '../../lib/manifest/types.js';
import { compactTable } from '../../lib/maintenance/compact.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { KIND_COLUMN, RowKind, SEQUENCE_COLUMN } from '../../lib/schema/types.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { readEntry } from '../../lib/table/read.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed } from '../helpers/random.js';

async function rowsOf(table: Table, entries: ManifestEntry[]): Promise<string[]> {
  const out: string[] = [];
  for (const e of entries) {
    const t = await readEntry(table, e);
    for (const r of tableToRows(t, [
      ...table.schema.fields,
      { id: -1, name: SEQUENCE_COLUMN, type: { root: 'BIGINT', nullable: false } },
      { id: -2, name: KIND_COLUMN, type: { root: 'TINYINT', nullable: false } },
    ] as never)) {
      out.push(`${r.id}=${r.v}@${Number(e.file.sequenceBase) + Number(r[SEQUENCE_COLUMN])}/${r[KIND_COLUMN]}`);
    }
  }
  return out.sort();
}

describe('deletion vectors leave streams and changelog producers as they are', () => {
  for (const producer of ['none', 'lookup']) {
    it(`changelog-producer ${producer}: the same changelog and delta rows at every snapshot`, async () => {
      const seed = testSeed(`deletion-vectors-changelog/${producer}`);
      const tables: Table[] = [];
      for (const dv of ['false', 'true']) {
        tables.push(
          await new FolderCatalog(new MemoryStore()).createTable('db.t', {
            fields: parseSchemaText('id INT NOT NULL, v BIGINT'),
            primaryKeys: ['id'],
            options: {
              bucket: '2',
              'write-only': 'true',
              'changelog-producer': producer,
              'deletion-vectors.enabled': dv,
            },
          }),
        );
      }
      for (const table of tables) {
        const r = rng(seed);
        for (let c = 0; c < 12; c++) {
          const ids = [...new Set(Array.from({ length: r.int(1, 15) }, () => r.int(1, 30)))];
          await table.write(
            ids.map((id) => ({ id, v: BigInt(r.int(0, 99)) })),
            { kinds: ids.map(() => (r.chance(0.2) ? RowKind.DELETE : RowKind.INSERT)) },
          );
          if (r.chance(0.3) || c % 4 === 3) await compactTable(table, { full: r.chance(0.5) });
        }
      }
      const [plain, dv] = tables;
      const last = (await plain.snapshots.latest())!.id;
      expect((await dv.snapshots.latest())!.id, `seed ${seed}`).toBe(last);
      let logged = 0;
      for (let id = 1; id <= last; id++) {
        const [a, b] = [(await plain.snapshots.tryRead(id))!, (await dv.snapshots.tryRead(id))!];
        expect(b.commitKind, `snapshot ${id}, seed ${seed}`).toBe(a.commitKind);
        expect(b.deletionVectors, `snapshot ${id}, seed ${seed}`).toBeDefined();
        const changelog = async (t: Table, s: typeof a) => rowsOf(t, await readChangelogFiles(t.store, t.path, s));
        const log = await changelog(plain, a);
        logged += log.length;
        expect(await changelog(dv, b), `changelog of snapshot ${id}, seed ${seed}`).toEqual(log);
        const delta = async (t: Table, s: typeof a) =>
          rowsOf(
            t,
            (await readDeltaEntries(t.store, t.path, s)).filter((e) => e.kind === 'ADD' && e.file.level === 0),
          );
        expect(await delta(dv, b), `delta of snapshot ${id}, seed ${seed}`).toEqual(await delta(plain, a));
      }
      // The lookup producer wrote changelog files: the comparison covered them.
      if (producer === 'lookup') expect(logged, `seed ${seed}`).toBeGreaterThan(0);
    }, 120_000);
  }
});
