/**
 * Randomized model test of compaction: seeded sequences of upserts and deletes across partitions
 * and buckets, with partial and full compactions (of one bucket, of the table, of one partition)
 * interleaved at random, for deduplicate and aggregation (sum). After every step the table reads
 * equal to an in-memory model, and every bucket keeps the LSM invariants.
 */
import { describe, expect, it } from 'vitest';
import { WriteStallError } from '../../lib/errors.js';
import { compactBucket, compactTable } from '../../lib/maintenance/compact.js';
import { RowKind } from '../../lib/schema/types.js';
import { DEDUPLICATE_MODEL, SUM_AGGREGATION_MODEL, type ModelEngine } from '../helpers/model-engines.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import {
  checkLevels,
  liveFilesByBucket,
  newTable,
  readState,
  sorted,
  writeChanges,
  type Change,
  type State,
} from './fixtures.js';

const engines: ModelEngine[] = [DEDUPLICATE_MODEL, SUM_AGGREGATION_MODEL];

const REGIONS = ['eu', 'us'];
/** Steps per sequence: sized for the default suite on a busy machine; compaction-model.stress.ts runs 40. */
const STEPS = process.env.VARVE_STRESS === '1' ? 40 : 20;

function genBatch(r: Rng): Change[] {
  const out: Change[] = [];
  const deleted = new Set<string>();
  const n = r.int(1, 30);
  for (let i = 0; i < n; i++) {
    const id = r.int(1, 60);
    const region = r.pick(REGIONS);
    const key = `${region}|${id}`;
    // Delete-then-insert of one key inside one batch is folded by the engine, not applied in
    // order (Paimon semantics); the generator keeps clear of it.
    if (deleted.has(key)) continue;
    const del = r.chance(0.2);
    if (del) deleted.add(key);
    const v = del ? null : BigInt(r.int(-50, 100));
    const s = del || r.chance(0.25) ? null : `s${r.int(0, 9)}`;
    out.push({ row: { id, region, v, s }, kind: del ? RowKind.DELETE : RowKind.INSERT });
  }
  return out;
}

describe('compaction model test', () => {
  for (const engine of engines) {
    for (const writeOnly of [false, true]) {
      it(`${engine.name}${writeOnly ? ', write-only' : ', inline compaction'}: reads equal the model through random compactions`, async () => {
        const seed = testSeed(`compaction-model/${engine.name}/${writeOnly ? 'write-only' : 'inline'}`);
        const r = rng(seed);
        const table = await newTable({
          bucket: '3',
          'num-sorted-run.compaction-trigger': String(r.int(2, 4)),
          // Small files: compaction output rolls, and some files are large enough to be upgraded.
          'target-file-size': `${r.int(2, 6)} kb`,
          'write-only': String(writeOnly),
          // Half the runs merge every section through spilled runs on local disk.
          'compaction.memory-budget': r.chance(0.5) ? '1 b' : '256 mb',
          ...engine.options,
        });
        const model: State = new Map();
        const log: string[] = [];
        for (let step = 0; step < STEPS; step++) {
          const op = r.next();
          if (op < 0.55) {
            const batch = genBatch(r);
            try {
              await writeChanges(table, batch);
            } catch (e) {
              // A write-only table stalls once compaction falls behind: compact, then write again.
              if (!(e instanceof WriteStallError)) throw e;
              await compactTable(table);
              await writeChanges(table, batch);
              log.push('stalled');
            }
            for (const c of batch)
              engine.apply(
                model,
                `${c.row.region}|${c.row.id}`,
                c.kind,
                c.row.v as bigint | null,
                c.row.s as string | null,
              );
            log.push(`write ${batch.length}`);
          } else if (op < 0.75) {
            const buckets = [...(await liveFilesByBucket(table)).values()];
            if (buckets.length === 0) continue;
            const e = r.pick(buckets)[0];
            const full = r.chance(0.3);
            await compactBucket(table, e.partition, e.bucket, { full });
            log.push(`compact ${e.partition}#${e.bucket}${full ? ' full' : ''}`);
          } else if (op < 0.9) {
            const full = r.chance(0.5);
            const partition = r.chance(0.3) ? { region: r.pick(REGIONS) } : undefined;
            await compactTable(table, { full, partition });
            log.push(`compact table${full ? ' full' : ''}${partition ? ` ${partition.region}` : ''}`);
          } else {
            await compactTable(table, { full: true, bucket: r.int(0, 2) });
            log.push('compact bucket number, full');
          }
          const context = `seed ${seed}, step ${step} (${log.slice(-3).join('; ')})`;
          expect(sorted(await readState(table)), context).toEqual(sorted(model));
          await checkLevels(table, context);
        }
        // A final full compaction leaves one max-level run per bucket, equal to the model.
        await compactTable(table, { full: true });
        expect(sorted(await readState(table)), `seed ${seed}, after the final full compaction`).toEqual(sorted(model));
        for (const [bucket, entries] of await liveFilesByBucket(table)) {
          expect(new Set(entries.map((e) => e.file.level)), `${bucket} (seed ${seed})`).toEqual(
            new Set([table.options.numLevels - 1]),
          );
        }
      });
    }
  }
});
