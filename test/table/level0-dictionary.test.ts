/**
 * Level-0 files choose their string dictionaries as compaction output does (dictionary-choice.ts):
 * a string column whose first 65,536 rows in the file are at least 90 % distinct (of at least
 * 4,096 non-null values) is written plain. Random tables, written inline, on the encoder pool's
 * gathering workers and on its row-group encoder (a table keeping its input as changelog): every file's dictionaries
 * follow the model of its own first rows, the three write the same pages, and the rows read back
 * by varve and by hyparquet (an outside reader) are the ones written.
 */
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { tableToRows } from '../../lib/format/columns.js';
import { readDataFile } from '../../lib/format/data-file.js';
import { DICTIONARY_SAMPLE_ROWS } from '../../lib/format/dictionary-choice.js';
import { configureEncoderPool, EncoderPool } from '../../lib/format/encoder-pool.js';
import { readLiveFiles } from '../../lib/manifest/scan.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import type { Row } from '../../lib/schema/types.js';
import { dataFileKey } from '../../lib/table/paths.js';
import type { Table } from '../../lib/table/table.js';
import { dataPart } from '../helpers/parquet-bytes.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { testTable } from '../helpers/tables.js';

const FIELDS = parseSchemaText('id BIGINT NOT NULL, name STRING, tag STRING, mixed STRING, n INT');
const STRINGS = ['name', 'tag', 'mixed'];

afterAll(async () => {
  await configureEncoderPool({ restart: true });
});

/** The model: the first DICTIONARY_SAMPLE_ROWS values, at least 4,096 non-null, 90 % distinct. */
function modelPlain(values: unknown[]): boolean {
  const sample = values.slice(0, DICTIONARY_SAMPLE_ROWS).filter((v) => v !== null);
  return sample.length >= 4_096 && new Set(sample).size >= 0.9 * sample.length;
}

/** Random rows: `name` unique per row, `tag` from a few values, `mixed` around the 90 % line; keys repeat. */
function randomWrite(r: Rng, n: number): Row[] {
  const pool = Math.max(1, Math.round(n * r.pick([0.3, 0.85, 1, 5])));
  const nulls = r.pick([0, 0.05, 0.5]);
  return Array.from({ length: n }, (_, i) => ({
    id: BigInt(r.int(0, Math.round(n * 1.1))),
    name: r.chance(nulls) ? null : `customer-${i}-${r.int(0, 9)}`,
    tag: r.chance(nulls) ? null : `tag-${r.int(0, 20)}`,
    mixed: r.chance(nulls) ? null : `m${r.int(0, pool)}`,
    n: r.int(-5, 5),
  }));
}

/** Each live file's bytes, by bucket. */
async function files(table: Table): Promise<Map<number, Uint8Array>> {
  const out = new Map<number, Uint8Array>();
  for (const e of await readLiveFiles(table.store, table.path, (await table.snapshots.latest())!))
    out.set(e.bucket, (await table.store.get(dataFileKey(table.path, e.partition, e.bucket, e.file.fileName))).body);
  return out;
}

/** Per string column of a file: whether any of its chunks has a dictionary. */
function dictionaries(bytes: Uint8Array): Record<string, boolean> {
  const meta = parquetMetadata(
    bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
  );
  const out: Record<string, boolean> = {};
  for (const g of meta.row_groups)
    for (const c of g.columns) {
      const m = c.meta_data!;
      const name = m.path_in_schema.join('.');
      if (STRINGS.includes(name))
        out[name] =
          (out[name] ?? false) || m.dictionary_page_offset !== undefined || m.encodings.includes('RLE_DICTIONARY');
    }
  return out;
}

describe('level-0 dictionary choice', () => {
  it('writes nearly unique string columns plain, the same inline, gathered and pooled, and every reader gets the rows back', async () => {
    const seed = testSeed('level-0 dictionary choice');
    const r = rng(seed);
    const gathered = vi.spyOn(EncoderPool.prototype, 'openGathered');
    const opened = vi.spyOn(EncoderPool.prototype, 'open');
    let plainSeen = 0;
    try {
      for (let round = 0; round < 3; round++) {
        // The first round large enough that some file has 4,096 non-null `name` values (the last assertion).
        const n = round === 0 ? r.pick([40_000, 90_000]) : r.pick([3_000, 12_000, 40_000, 90_000]);
        const buckets = r.pick([1, 2]);
        const rows = randomWrite(r, n);
        const context = `round ${round}, ${n} rows, ${buckets} bucket(s), seed ${seed}`;
        // hyparquet reads no zstd: the files are snappy (the choice does not depend on the codec).
        const options = { bucket: String(buckets), 'write-only': 'true', 'file.compression': 'snappy' };
        const inline = await testTable({ schema: FIELDS, primaryKeys: ['id'], options });
        const pooled = await testTable({ schema: FIELDS, primaryKeys: ['id'], options });
        // With the input kept as the changelog, a flush goes through the pool's row-group encoder
        // (rows gathered on this thread) instead of its gathering workers.
        const changelog = await testTable({
          schema: FIELDS,
          primaryKeys: ['id'],
          options: { ...options, 'changelog-producer': 'input' },
        });

        // Act: the same rows inline, on the gathering workers, and through the pool's row-group encoder.
        await configureEncoderPool({ threads: 0 });
        await inline.write(rows);
        await configureEncoderPool({ threads: 2, minFlushBytes: 0 });
        gathered.mockClear();
        opened.mockClear();
        await pooled.write(rows);
        expect(gathered.mock.calls.length, context).toBe(buckets);
        await changelog.write(rows);
        expect(opened.mock.calls.length, context).toBeGreaterThan(0);

        // Assess: per file, dictionaries as the model of its first rows says; the same pages from all three.
        const a = await files(inline);
        const b = await files(pooled);
        const c = await files(changelog);
        expect([...b.keys()].sort(), context).toEqual([...a.keys()].sort());
        expect([...c.keys()].sort(), context).toEqual([...a.keys()].sort());
        for (const [bucket, bytes] of a) {
          const back = tableToRows(await readDataFile(bytes), FIELDS);
          const want = Object.fromEntries(STRINGS.map((s) => [s, !modelPlain(back.map((row) => row[s]))]));
          expect(dictionaries(bytes), `bucket ${bucket}, ${context}`).toEqual(want);
          plainSeen += STRINGS.filter((s) => !want[s]).length;
          expect(
            Buffer.from(dataPart(b.get(bucket)!)).equals(Buffer.from(dataPart(bytes))),
            `bucket ${bucket}, ${context}`,
          ).toBe(true);
          expect(
            Buffer.from(dataPart(c.get(bucket)!)).equals(Buffer.from(dataPart(bytes))),
            `bucket ${bucket}, ${context}`,
          ).toBe(true);
          const outside = (await parquetReadObjects({
            file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
            columns: ['id', ...STRINGS, 'n'],
          })) as Row[];
          expect(
            outside.map((o) => ({ ...o, id: BigInt(o.id as bigint) })),
            `bucket ${bucket}, ${context}`,
          ).toEqual(back.map((row) => ({ id: row.id, name: row.name, tag: row.tag, mixed: row.mixed, n: row.n })));
        }
        // The table's rows: each key's last version.
        const last = new Map<bigint, Row>();
        for (const row of rows) last.set(row.id as bigint, row);
        const expected = [...last.values()].sort((x, y) => (x.id! < y.id! ? -1 : x.id! > y.id! ? 1 : 0));
        const sorted = (t: Table) =>
          t.read().then((x) => tableToRows(x, FIELDS).sort((p, q) => (p.id! < q.id! ? -1 : p.id! > q.id! ? 1 : 0)));
        for (const t of [inline, pooled, changelog]) expect(await sorted(t), context).toEqual(expected);
      }
    } finally {
      gathered.mockRestore();
      opened.mockRestore();
    }
    // The rule took effect somewhere (`name` is unique per row; a file of 4,096 rows or more writes it plain).
    expect(plainSeen, `seed ${seed}`).toBeGreaterThan(0);
  });
});
