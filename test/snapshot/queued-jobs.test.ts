/**
 * The record of queued compaction jobs each snapshot carries (lib/snapshot/queued-jobs.ts) under
 * random orders of commits, job sends, job starts and job ends, with sends and jobs lost: a model
 * table of 3 buckets (one FIFO message group each, one job of a bucket running at a time, as on
 * SQS) whose snapshots are planned with the real rule (nextQueuedJobs) on real per-bucket
 * summaries. Checked: once every job that was sent has run, a bucket still due is one whose last
 * job was lost, and the record says so; once the freshness window has passed, one commit to any
 * bucket sends those jobs again, and after they ran no bucket is due.
 */
import { describe, expect, it } from 'vitest';
import type { ManifestEntry } from '../../lib/manifest/types.js';
import {
  addBucketFiles,
  type BucketSummary,
  bucketSummaryWithout,
  summaryBucketFiles,
} from '../../lib/snapshot/bucket-summary.js';
import {
  nextQueuedJobs,
  type QueuedJob,
  QUEUED_JOB_FRESH_MS,
  type CompactionDue,
} from '../../lib/snapshot/queued-jobs.js';
import { rng, type Rng, testSeed } from '../helpers/random.js';

const BUCKETS = 3;
const TRIGGER = 3;

/** Due from 3 sorted runs on (each level-0 file a run, each level ≥ 1 one). */
const due: CompactionDue = (summary, partition, bucket) => {
  const files = summaryBucketFiles(summary, partition, bucket);
  return files !== undefined && files.level0.length + files.levels.size >= TRIGGER;
};

interface Model {
  r: Rng;
  now: number;
  id: number;
  seq: number;
  live: ManifestEntry[];
  summary: BucketSummary;
  jobs: QueuedJob[];
  /** Per bucket, the messages waiting in its group (the id of the snapshot that queued each). */
  queue: number[][];
  /** Per bucket, the files the running job read, or undefined. */
  running: Array<ManifestEntry[] | undefined>;
  /** Snapshot ids whose job was lost (send lost, or the job gave up for good). */
  lost: Set<number>;
  losses: boolean;
}

function entry(kind: 'ADD' | 'DELETE', bucket: number, level: number, m: Model, size: number): ManifestEntry {
  const seq = m.seq++;
  return {
    kind,
    partition: '',
    bucket,
    totalBuckets: BUCKETS,
    file: {
      fileName: `f-${seq}`,
      fileSize: size,
      rowCount: 1,
      minKey: [],
      maxKey: [],
      sequenceBase: 0,
      minSequenceNumber: seq,
      maxSequenceNumber: seq,
      schemaId: 0,
      level,
      creationTime: m.now,
      deleteRowCount: 0,
      fileSource: level === 0 ? 'APPEND' : 'COMPACT',
    },
  };
}

/** One commit: plans the record with the rule, then its committer sends what it queued (unless the send is lost). */
function commit(m: Model, adds: ManifestEntry[], deletes: ManifestEntry[]): void {
  const removed = new Set(deletes.map((e) => e.file.fileName));
  const summary = addBucketFiles(bucketSummaryWithout(m.summary, deletes)!, adds);
  m.id++;
  m.jobs = nextQueuedJobs(m.jobs, { snapshotId: m.id, now: m.now, adds, deletes, summary, due });
  m.summary = summary;
  m.live = [...m.live.filter((e) => !removed.has(e.file.fileName)), ...adds];
  for (const [, bucket, , by] of m.jobs) {
    if (by !== m.id) continue;
    if (m.losses && m.r.chance(0.1)) m.lost.add(by);
    else m.queue[bucket].push(by);
  }
}

function append(m: Model, bucket: number): void {
  commit(m, [entry('ADD', bucket, 0, m, m.r.int(1, 100))], []);
}

/** A job of `bucket` starts: it reads the bucket's files in the latest snapshot. */
function start(m: Model, bucket: number): void {
  const by = m.queue[bucket].shift()!;
  if (m.losses && m.r.chance(0.05)) {
    m.lost.add(by); // its retries exhausted: it never compacts
    return;
  }
  m.running[bucket] = m.live.filter((e) => e.bucket === bucket);
}

/** The running job of `bucket` ends: compacts what it read when that was due, into one level-1 file. */
function finish(m: Model, bucket: number): void {
  const read = m.running[bucket]!;
  m.running[bucket] = undefined;
  const runs = read.filter((e) => e.file.level === 0).length + (read.some((e) => e.file.level > 0) ? 1 : 0);
  if (runs < TRIGGER) return;
  const size = read.reduce((s, e) => s + e.file.fileSize, 0);
  commit(
    m,
    [entry('ADD', bucket, 1, m, size)],
    read.map((e) => ({ ...e, kind: 'DELETE' })),
  );
}

/** Runs every job sent, and those they send, to the end (nothing lost). */
function drain(m: Model): void {
  m.losses = false;
  for (;;) {
    const b = [...Array(BUCKETS).keys()].find((x) => m.running[x] !== undefined || m.queue[x].length > 0);
    if (b === undefined) return;
    if (m.running[b] === undefined) start(m, b);
    else finish(m, b);
  }
}

/** A table with no commit yet, its BUCKETS buckets idle; `losses`: sends and jobs may be lost. */
function newModel(r: Rng, losses: boolean): Model {
  return {
    r,
    now: 1_000_000,
    id: 0,
    seq: 0,
    live: [],
    summary: new Map(),
    jobs: [],
    queue: [...Array(BUCKETS)].map(() => []),
    running: Array(BUCKETS).fill(undefined),
    lost: new Set(),
    losses,
  };
}

function dueBuckets(m: Model): number[] {
  return [...Array(BUCKETS).keys()].filter((b) => due(m.summary, '', b));
}

function run(r: Rng, steps: number): void {
  const m = newModel(r, true);
  for (let i = 0; i < steps; i++) {
    m.now += r.chance(0.02) ? r.int(QUEUED_JOB_FRESH_MS / 2, QUEUED_JOB_FRESH_MS * 2) : r.int(0, 5_000);
    const b = r.int(0, BUCKETS - 1);
    const what = r.next();
    if (what < 0.5) append(m, b);
    else if (m.running[b] === undefined && m.queue[b].length > 0) start(m, b);
    else if (m.running[b] !== undefined) finish(m, b);
  }
  drain(m);
  // Every due bucket is one whose job was lost, and its record names that job.
  for (const b of dueBuckets(m)) {
    const record = m.jobs.find((j) => j[1] === b);
    expect(record, `bucket ${b} is due with no job recorded`).toBeDefined();
    expect(m.lost.has(record![3]), `bucket ${b} is due, its job (snapshot ${record![3]}) was not lost`).toBe(true);
  }
  // Past the window, one commit to any bucket sends the lost jobs again.
  m.now += QUEUED_JOB_FRESH_MS;
  append(m, r.int(0, BUCKETS - 1));
  drain(m);
  expect(dueBuckets(m)).toEqual([]);
  expect(m.jobs.every(([, bucket]) => !due(m.summary, '', bucket) || m.queue[bucket].length > 0)).toBe(true);
}

describe('the record of queued compaction jobs', () => {
  it('leaves no bucket due without a job coming, beyond the freshness window, under random orders and losses', () => {
    const seed = testSeed('queued-jobs');
    const r = rng(seed);
    for (let round = 0; round < 300; round++) run(r, r.int(10, 200));
  });

  it('sends one job for many commits to a due bucket, and the next once the job read it', () => {
    // Prepare: a bucket due after 3 appends
    const m = newModel(rng(1), false);

    // Act: 6 appends, the job starts, 2 more land while it runs, it ends
    for (let i = 0; i < 6; i++) append(m, 0);
    const queuedBefore = [...m.queue[0]];
    start(m, 0);
    append(m, 0);
    append(m, 0);
    const whileRunning = [...m.queue[0]];
    finish(m, 0);

    // Assess: one job for 6 commits (queued by the third); none while it ran; its commit found the
    // bucket still due (level 1 + 2 new files) and queued the next
    expect(queuedBefore).toEqual([3]);
    expect(whileRunning).toEqual([]);
    expect(m.queue[0]).toEqual([m.id]);
    expect(m.jobs).toEqual([['', 0, m.now, m.id]]);
  });
});
