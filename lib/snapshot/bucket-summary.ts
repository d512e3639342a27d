/**
 * What a snapshot carries of its live files per bucket (snapshot property `varve.buckets`), so
 * that a cold committer decides without reading the table's manifests: the partition's bucket
 * count (the conflict check's), and each bucket's sorted runs with their sizes (back-pressure's
 * run count, and universal compaction's pick for the compaction-job check, which only weighs
 * run sizes and levels). Each commit derives its summary from its base's and its own changes
 * (planCommit), so it stays exact without a read: a file a commit removes is one its base holds
 * (the conflict check keeps it so, or the snapshot is never created), and every commit goes
 * through planCommit.
 *
 * Absent (and then read from the manifests, as before): a table older than the summary, a base a
 * writer without it committed (it does not copy the base's properties), a summary over MAX_CHARS,
 * or one a change does not fit (a removed file it does not hold). Each is dropped, never guessed:
 * the next commit on a base without it writes none either.
 */
import { jsonObject, parseJsonProperty } from '../json.js';
import type { DataFileMeta, ManifestEntry } from '../manifest/types.js';
import type { Snapshot } from './snapshot.js';

/** Snapshot property holding the summary (see the file comment). */
export const BUCKETS_PROPERTY = 'varve.buckets';

/**
 * Largest summary carried, in characters: every lookup of the latest snapshot reads it. A
 * 4-bucket table with a few level-0 files per bucket needs about 1 KB; a table with hundreds of
 * partition buckets goes without.
 */
const MAX_CHARS = 32_768;

/** A level-0 file as the LSM order and the compaction pick see it: [maxSequenceNumber, minSequenceNumber, creationTime, fileSize]. */
type Level0File = [maxSeq: number, minSeq: number, creationTime: number, size: number];

/** One bucket's live files: each level-0 file, and per level ≥ 1 its file count and bytes. */
export interface BucketFiles {
  level0: Level0File[];
  levels: Map<number, { files: number; bytes: number }>;
}

/** One partition's live files per bucket, and the bucket count they were written for. */
interface PartitionFiles {
  totalBuckets: number;
  buckets: Map<number, BucketFiles>;
}

/** The live files of a snapshot per partition and bucket (only partitions and buckets holding files). */
export type BucketSummary = Map<string, PartitionFiles>;

const parsed = new WeakMap<Snapshot, BucketSummary | undefined>();

/**
 * The summary `snapshot` carries: an empty one for the empty table (no snapshot), undefined when
 * it carries none (or one that does not parse: read the manifests instead).
 */
export function bucketSummaryOf(snapshot: Snapshot | undefined): BucketSummary | undefined {
  if (snapshot === undefined) return new Map();
  if (!parsed.has(snapshot)) parsed.set(snapshot, decodeBucketSummary(snapshot.properties?.[BUCKETS_PROPERTY]));
  return parsed.get(snapshot);
}

/**
 * A copy of `base` less `deletes` (undefined when a removed file is not in it): what the conflict
 * check reads the partitions' bucket counts from, and, with the commit's adds (addBucketFiles),
 * the summary of the snapshot it plans.
 */
export function bucketSummaryWithout(
  base: BucketSummary,
  deletes: readonly ManifestEntry[],
): BucketSummary | undefined {
  const next: BucketSummary = new Map();
  for (const [p, part] of base) {
    const buckets = new Map<number, BucketFiles>();
    for (const [b, f] of part.buckets)
      buckets.set(b, { level0: [...f.level0], levels: new Map([...f.levels].map(([l, v]) => [l, { ...v }])) });
    next.set(p, { totalBuckets: part.totalBuckets, buckets });
  }
  for (const e of deletes) if (!remove(next, e)) return undefined;
  return next;
}

/** Adds `adds` to `summary` (in place). */
export function addBucketFiles(summary: BucketSummary, adds: readonly ManifestEntry[]): BucketSummary {
  for (const e of adds) add(summary, e);
  return summary;
}

function remove(summary: BucketSummary, e: ManifestEntry): boolean {
  const part = summary.get(e.partition);
  const files = part?.buckets.get(e.bucket);
  if (!part || !files) return false;
  const f = e.file;
  if (f.level === 0) {
    const i = files.level0.findIndex(
      ([max, min, time, size]) =>
        max === f.maxSequenceNumber && min === f.minSequenceNumber && time === f.creationTime && size === f.fileSize,
    );
    if (i < 0) return false;
    files.level0.splice(i, 1);
  } else {
    const level = files.levels.get(f.level);
    if (!level || level.files < 1 || level.bytes < f.fileSize) return false;
    level.files--;
    level.bytes -= f.fileSize;
    if (level.files === 0) files.levels.delete(f.level);
  }
  if (files.level0.length === 0 && files.levels.size === 0) part.buckets.delete(e.bucket);
  // A partition without files has no bucket count: the next file may come with another one.
  if (part.buckets.size === 0) summary.delete(e.partition);
  return true;
}

function add(summary: BucketSummary, e: ManifestEntry): void {
  let part = summary.get(e.partition);
  if (!part) summary.set(e.partition, (part = { totalBuckets: e.totalBuckets, buckets: new Map() }));
  // The newest file's count, as findPartitionTotalBuckets answers: the conflict check refuses a
  // commit whose files disagree with its partition's, so they all agree in a committed snapshot.
  part.totalBuckets = e.totalBuckets;
  let files = part.buckets.get(e.bucket);
  if (!files) part.buckets.set(e.bucket, (files = { level0: [], levels: new Map() }));
  const f = e.file;
  if (f.level === 0) files.level0.push([f.maxSequenceNumber, f.minSequenceNumber, f.creationTime, f.fileSize]);
  else {
    const level = files.levels.get(f.level) ?? { files: 0, bytes: 0 };
    files.levels.set(f.level, { files: level.files + 1, bytes: level.bytes + f.fileSize });
  }
}

/**
 * The property value of `summary`, undefined when it is over MAX_CHARS. Layout:
 * `{"<partition>":[totalBuckets,{"<bucket>":[[level-0 file…],[[level,files,bytes]…]]}]}`.
 */
export function encodeBucketSummary(summary: BucketSummary): string | undefined {
  const out: Record<string, [number, Record<string, [Level0File[], Array<[number, number, number]>]>]> = {};
  for (const [p, part] of summary) {
    const buckets: Record<string, [Level0File[], Array<[number, number, number]>]> = {};
    for (const [b, f] of part.buckets)
      buckets[b] = [f.level0, [...f.levels].sort((x, y) => x[0] - y[0]).map(([l, v]) => [l, v.files, v.bytes])];
    out[p] = [part.totalBuckets, buckets];
  }
  const text = JSON.stringify(out);
  return text.length <= MAX_CHARS ? text : undefined;
}

const isCount = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;
const isInt = (x: unknown): x is number => Number.isSafeInteger(x);

/** The summary a property value holds, undefined when it is absent or not one encodeBucketSummary wrote. */
function decodeBucketSummary(text: string | undefined): BucketSummary | undefined {
  const raw = parseJsonProperty(text, jsonObject);
  if (raw === undefined) return undefined;
  const summary: BucketSummary = new Map();
  for (const [p, value] of Object.entries(raw)) {
    if (!Array.isArray(value) || value.length !== 2 || !isCount(value[0])) return undefined;
    const [totalBuckets, rawBuckets] = value as [number, unknown];
    if (typeof rawBuckets !== 'object' || rawBuckets === null) return undefined;
    const buckets = new Map<number, BucketFiles>();
    for (const [b, v] of Object.entries(rawBuckets)) {
      const files = decodeBucket(v);
      if (!files || !isInt(Number(b))) return undefined;
      buckets.set(Number(b), files);
    }
    summary.set(p, { totalBuckets, buckets });
  }
  return summary;
}

function decodeBucket(v: unknown): BucketFiles | undefined {
  if (!Array.isArray(v) || v.length !== 2 || !Array.isArray(v[0]) || !Array.isArray(v[1])) return undefined;
  const level0: Level0File[] = [];
  for (const f of v[0] as unknown[]) {
    if (!Array.isArray(f) || f.length !== 4 || !f.every(isInt) || !isCount(f[3])) return undefined;
    level0.push(f as Level0File);
  }
  const levels = new Map<number, { files: number; bytes: number }>();
  for (const l of v[1] as unknown[]) {
    if (!Array.isArray(l) || l.length !== 3 || !l.every(isCount) || l[0] < 1 || l[1] < 1) return undefined;
    levels.set(l[0], { files: l[1], bytes: l[2] });
  }
  return { level0, levels };
}

/** One bucket's files in `summary`, undefined when the bucket holds none. */
export function summaryBucketFiles(summary: BucketSummary, partition: string, bucket: number): BucketFiles | undefined {
  return summary.get(partition)?.buckets.get(bucket);
}

/** The bucket count of each of `partitions` that holds files in `summary` (findPartitionTotalBuckets's answer). */
export function summaryTotalBuckets(summary: BucketSummary, partitions: Iterable<string>): Map<string, number> {
  const found = new Map<string, number>();
  for (const p of partitions) {
    const part = summary.get(p);
    if (part) found.set(p, part.totalBuckets);
  }
  return found;
}

/**
 * Stand-ins for a bucket's files with what the LSM levels and the compaction pick read of them
 * (level, sequence numbers, creation time, size; a level's bytes on its first file): the same
 * sorted runs, sizes and file counts, so the same pick. No keys: build Levels without a comparator.
 * Level 0 is ordered by maxSequenceNumber, minSequenceNumber, creationTime and then the file name,
 * which a stand-in does not have; no two live level-0 files of a bucket tie on the first: every
 * row gets its own sequence number (a writer numbers its batch, the commit adds a base past every
 * earlier one), and a primary-key table's compaction never writes level 0.
 */
export function standInFiles(files: BucketFiles): DataFileMeta[] {
  const out: DataFileMeta[] = [];
  const file = (level: number, size: number, max: number, min: number, time: number, i: number): DataFileMeta => ({
    fileName: `stand-in-${level}-${i}`,
    fileSize: size,
    rowCount: 0,
    minKey: [],
    maxKey: [],
    sequenceBase: 0,
    minSequenceNumber: min,
    maxSequenceNumber: max,
    schemaId: 0,
    level,
    creationTime: time,
    deleteRowCount: 0,
    fileSource: 'APPEND',
  });
  files.level0.forEach(([max, min, time, size], i) => out.push(file(0, size, max, min, time, i)));
  for (const [level, { files: n, bytes }] of files.levels)
    for (let i = 0; i < n; i++) out.push(file(level, i === 0 ? bytes : 0, 0, 0, 0, i));
  return out;
}
