/**
 * The AWS requests of one invocation of the ingest and the commit functions, cold (a new
 * container) and warm (its next invocations), called in-process the way Lambda calls them: real
 * SQS events from the deployment's queues (queue commit mode, the default), the functions' own
 * SDK clients on moto, every request counted by an SDK middleware (bench/lib/aws-requests.ts).
 * A container is the functions' modules imported afresh (vi.resetModules): its clients, opened
 * tables and caches start empty, as in a new Lambda container; ingest and commit each have their
 * own, as on AWS. The table has 2 buckets and one earlier commit (snapshot 1: one manifest list,
 * one manifest), so a cold container has history to look up.
 *
 * The budget, request by request (issue 32: no LIST, each immutable object read at most once per
 * container, 3 metadata PUTs per commit):
 *
 * cold ingest (10) — open the table: the catalog item (DynamoDB GetItem), schema-0 (GET) and a
 *   HEAD of schema-1 (none: the latest schema is found without listing); routing (each
 *   partition's bucket count is its files'): the LATEST hint, snapshot-1 (GET) and a HEAD of
 *   snapshot-2 (none: 1 is the latest), no manifest: the snapshot carries each partition's bucket
 *   count (lib/snapshot/bucket-summary.ts); the batch: 2 data files (one per bucket), its pending
 *   registration (PUT), the commit message (SQS SendMessage).
 * warm ingest (4) — the 2 data files, the registration, the commit message: the table, its
 *   schema and the partitions' bucket counts are known.
 * cold commit (11) — open the table at the schema the batch's writer found newest (its message
 *   says which, and when the writer looked: less than a minute ago, the life of a warm container's
 *   table), read from the table's standard folder: schema-0 (GET; no catalog item, no HEAD of
 *   schema-1: lib/aws/tables.ts openAtSeenSchema has the argument; an older lookup or a message
 *   without one opens through the catalog, 3 requests: the last test below); the deduplication
 *   window (RecentBatches)
 *   looks the latest snapshot up: LATEST, snapshot-1, a HEAD of snapshot-2 (3), and the commit
 *   starts from that same snapshot; the batch's 2 data files are not checked (a batch younger
 *   than its pending registration's retention, written after every snapshot the window knows,
 *   cannot have lost them: lib/table/group-commit.ts filesMayBeGone; an old one, a redrive, is
 *   checked: test/table/group-commit-file-checks.test.ts); no manifest is read: the back-pressure
 *   check (sorted runs of the touched buckets), the partitions' bucket counts of the conflict
 *   check and the compaction-job check after the commit read what the snapshots carry per bucket
 *   (lib/snapshot/bucket-summary.ts), and the batch's files are not looked for among the live
 *   ones (the window found no snapshot holding them: group-commit.ts addsUnseenThrough); the
 *   commit reads the base's manifest list (1), to write the new one from it; the commit
 *   identifier's claim (conditional PUT), the manifest, the manifest list, snapshot-2 (3 PUTs:
 *   the LATEST hint was current, so it is not written); the `Snapshot Committed` event
 *   (EventBridge PutEvents); the registration released (DELETE).
 * A commit that finds buckets due for compaction sends their jobs in one SendMessageBatch (+1),
 *   only those no earlier snapshot records as queued: each snapshot records the buckets with a job
 *   queued (lib/snapshot/queued-jobs.ts), so the check reads the base the commit already has (no
 *   request); a "job queued" marker per bucket cost a HEAD per due bucket per commit and a PUT per
 *   job sent before (cold commit 15 median, 17 at most in the e2e: 7 for 3 due buckets).
 * warm commit (8) — the window's check for commits by others: snapshot-N still there and no
 *   snapshot-N+1 (2 HEADs, N being the container's own last commit, whose manifests it wrote and
 *   keeps); then as cold: the claim, 3 metadata PUTs, the event, the release.
 * Direct commit mode (the ingest function commits itself):
 * cold ingest (15) — open (3), the latest snapshot (3) (routing and the back-pressure check read
 *   what it carries per bucket), its manifest list and manifest (2): the commit looks the batch's
 *   files up among the live ones (no deduplication window vouches for them in direct mode); 2
 *   data files, the claim, 3 metadata PUTs, the event.
 * warm ingest (7, 8 with the check) — 2 data files, the claim, 3 metadata PUTs, the event: the
 *   commit bets on its own last snapshot being the latest (a lost race reloads), and checks that
 *   it still exists (the HEAD below: a second has passed since this container made it).
 * cold compaction (the last test: 2 buckets of 3 runs each, one job) — no metadata object read
 *   twice and the LATEST hint once: the compaction rounds and their commit look the latest
 *   snapshot up through the committer's caching manager (one lookup, each snapshot one GET; 44
 *   requests before, 32 now), and the sorted runs left are read from what the committed snapshot
 *   carries per bucket.
 * A commit checks its base again (one HEAD of snapshot-N) when a step took over a second since it
 * was last seen (lib/snapshot/commit-steps.ts: never re-create an expired id); on a busy machine
 * that can happen at warmBase and at publish, so up to 2 such HEADs are allowed beyond the budget.
 */
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { awsAvailable } from '../helpers/aws.js';
import { alterTable } from '../../lib/table/alter.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { latestHintKey } from '../../lib/snapshot/paths.js';
import { QUEUED_JOBS_PROPERTY } from '../../lib/snapshot/queued-jobs.js';
import { captureMetrics, createOrders, deploy, drain, powertoolsEnv, reopen, sendBodies, takeAll } from './harness.js';

// The handlers' EMF metric lines stay off the test output.
captureMetrics();

type SqsFn = (e: SQSEvent) => Promise<SQSBatchResponse>;

interface Request {
  service: string;
  command: string;
  key: string;
}

/** A new container: the functions' modules imported afresh, and every request their clients make from now on. */
async function coldContainer(env: Record<string, string>) {
  vi.resetModules();
  const { onAwsRequest } = await import('../../bench/lib/aws-requests.js');
  const { createCommitHandler } = await import('../../functions/commit.js');
  const { createIngestHandler } = await import('../../functions/ingest.js');
  const { createCompactHandler } = await import('../../functions/compact.js');
  const requests: Request[] = [];
  onAwsRequest((r) =>
    requests.push({
      service: r.service,
      command: r.command,
      key: r.service === 'S3' ? String(r.input.Key ?? r.input.Prefix) : '',
    }),
  );
  return {
    requests,
    ingest: createIngestHandler(env) as SqsFn,
    commit: createCommitHandler(env) as SqsFn,
    compact: createCompactHandler(env) as SqsFn,
  };
}

/** What a request is, named relative to the base snapshot `base` (the latest one before the invocation). */
function label(r: Request, base: number): string {
  const k = r.key.replace(/^.*?\/orders\//, '');
  const what =
    r.service !== 'S3'
      ? ''
      : k === `snapshot/snapshot-${base}`
        ? 'snapshot-base'
        : k === `snapshot/snapshot-${base + 1}`
          ? 'snapshot-new'
          : k.startsWith('bucket-')
            ? 'data-file'
            : k.startsWith('pending/')
              ? 'pending'
              : k.startsWith('commit/identifier-')
                ? 'identifier'
                : k.replace(/^(manifest|snapshot|schema)\//, '').replace(/^(manifest(-list)?)-.*$/, '$1');
  return `${r.service}:${r.command} ${what}`.trim();
}

/**
 * The labels of `requests`, sorted, with the base re-checks beyond the budget's own HEADs of the
 * base taken out (at most 2, see the file comment); fails when there are more.
 */
function labelled(requests: Request[], base: number, budgetBaseHeads: number, shown: string): string[] {
  const labels = requests.map((r) => label(r, base)).sort();
  const heads = labels.filter((l) => l === 'S3:HeadObject snapshot-base').length;
  expect(heads - budgetBaseHeads, `re-checks of the base:\n${shown}`).toBeLessThanOrEqual(2);
  const rest = labels.filter((l) => l !== 'S3:HeadObject snapshot-base');
  for (let i = 0; i < Math.min(heads, budgetBaseHeads); i++) rest.push('S3:HeadObject snapshot-base');
  return rest.sort();
}

const OPEN = ['DynamoDB:GetItem', 'S3:GetObject schema-0', 'S3:HeadObject schema-1'];
const LOOKUP = ['S3:GetObject LATEST', 'S3:GetObject snapshot-base', 'S3:HeadObject snapshot-new'];
const MANIFESTS = ['S3:GetObject manifest-list', 'S3:GetObject manifest'];
const BATCH = ['S3:PutObject data-file', 'S3:PutObject data-file', 'S3:PutObject pending', 'SQS:SendMessage'];
const COMMIT = [
  'S3:PutObject(if-none-match) identifier',
  'S3:PutObject manifest',
  'S3:PutObject manifest-list',
  'S3:PutObject(if-none-match) snapshot-new',
  'EventBridge:PutEvents',
  'S3:DeleteObject pending',
];
const QUEUED = {
  coldIngest: [...OPEN, ...LOOKUP, ...BATCH],
  warmIngest: BATCH,
  coldCommit: ['S3:GetObject schema-0', ...LOOKUP, 'S3:GetObject manifest-list', ...COMMIT],
  warmCommit: ['S3:HeadObject snapshot-base', 'S3:HeadObject snapshot-new', ...COMMIT],
};
const DIRECT_COMMIT = [
  'S3:PutObject data-file',
  'S3:PutObject data-file',
  'S3:PutObject(if-none-match) identifier',
  'S3:PutObject manifest',
  'S3:PutObject manifest-list',
  'S3:PutObject(if-none-match) snapshot-new',
  'EventBridge:PutEvents',
];
const DIRECT = { coldIngest: [...OPEN, ...LOOKUP, ...MANIFESTS, ...DIRECT_COMMIT], warmIngest: DIRECT_COMMIT };

type Fn = 'ingest' | 'commit';

/** Batch `i` of 20 orders (ids from i × 20, into both buckets) as one message body. */
const orderRows = (i: number) =>
  JSON.stringify(Array.from({ length: 20 }, (_, k) => ({ id: i * 20 + k, status: 'new', amount: k })));

/**
 * A 2-bucket table where 2 sorted runs call for compaction, with 3 commits into both buckets by
 * one container (`history`; its jobs queued, left in the queue).
 */
async function compactionDueHistory() {
  powertoolsEnv();
  const d = await deploy();
  await createOrders(d, { 'num-sorted-run.compaction-trigger': '2' });
  const env = d.env('queue');
  const history = await coldContainer(env);
  for (let i = 0; i < 3; i++) {
    await sendBodies(d.ingestUrl, [orderRows(i)]);
    await drain(d.ingestUrl, history.ingest);
    await drain(d.commitUrl, history.commit);
  }
  return { d, env, history };
}

/**
 * Three rounds of one batch through new ingest and commit containers (the commit one only in
 * queue mode) of a 2-bucket table with one earlier commit; the requests of each invocation.
 */
async function threeRounds(mode: 'queue' | 'direct'): Promise<Array<Record<Fn, Request[]>>> {
  powertoolsEnv();
  const d = await deploy();
  await createOrders(d);
  const env = d.env(mode);
  const history = await coldContainer(env);
  await sendBodies(d.ingestUrl, [orderRows(0)]);
  await drain(d.ingestUrl, history.ingest);
  await drain(d.commitUrl, history.commit);
  const ingest = await coldContainer(env);
  const commit = await coldContainer(env);
  const rounds: Array<Record<Fn, Request[]>> = [];
  for (let i = 1; i <= 3; i++) {
    await sendBodies(d.ingestUrl, [orderRows(i)]);
    ingest.requests.length = 0;
    expect(await drain(d.ingestUrl, ingest.ingest)).toHaveLength(1);
    const ingested = [...ingest.requests];
    commit.requests.length = 0;
    expect(await drain(d.commitUrl, commit.commit)).toHaveLength(mode === 'queue' ? 1 : 0);
    rounds.push({ ingest: ingested, commit: [...commit.requests] });
    await takeAll(d.compactUrl);
  }
  return rounds;
}

/** Checks each invocation against its budget and the per-container rules; prints them. */
function assess(
  title: string,
  rounds: Array<Record<Fn, Request[]>>,
  fns: readonly Fn[],
  budgets: Partial<Record<string, string[]>>,
): void {
  const lines: string[] = [];
  rounds.forEach((r, i) => {
    const base = i + 1;
    const which = i === 0 ? 'cold' : 'warm';
    for (const fn of fns) {
      const shown = r[fn].map((q) => `  ${label(q, base)}  ${q.key.replace(/^.*?\/orders\//, '')}`).join('\n');
      lines.push(`${fn} ${i + 1} (${which}): ${r[fn].length} requests\n${shown}`);
      const budget = budgets[`${which}${fn === 'ingest' ? 'Ingest' : 'Commit'}`]!;
      const baseHeads = budget.filter((l) => l === 'S3:HeadObject snapshot-base').length;
      expect(labelled(r[fn], base, baseHeads, shown), `${fn} invocation ${i + 1}:\n${shown}`).toEqual(
        [...budget].sort(),
      );
    }
  });
  console.log(`requests per invocation (${title})\n${lines.join('\n')}`);
  for (const fn of fns) {
    const all = rounds.flatMap((r) => r[fn]);
    expect(all.filter((q) => q.command.startsWith('List'))).toEqual([]);
    // Each object read at most once per container: schema, snapshots, manifests (and the
    // hint); each data file checked once.
    const gets = all.filter((q) => q.command === 'GetObject').map((q) => q.key);
    expect(gets.length, `${fn}: an object read twice`).toBe(new Set(gets).size);
    const fileHeads = all.filter((q) => q.command === 'HeadObject' && /\/bucket-\d+\//.test(q.key)).map((q) => q.key);
    expect(fileHeads.length, `${fn}: a data file checked twice`).toBe(new Set(fileHeads).size);
  }
}

describe.skipIf(!awsAvailable())('requests of a cold and a warm ingest and commit invocation (moto)', () => {
  it('queue mode: keep to the budget, no LIST, each immutable object read once per container, 3 metadata PUTs', {
    timeout: 240_000,
  }, async () => {
    // Prepare, Act: see threeRounds
    const rounds = await threeRounds('queue');
    // Assess
    assess('2 buckets, queue mode', rounds, ['ingest', 'commit'], QUEUED);
  });

  it('direct mode: keep to the budget, no LIST, each immutable object read once per container, 3 metadata PUTs', {
    timeout: 240_000,
  }, async () => {
    // Prepare, Act: see threeRounds
    const rounds = await threeRounds('direct');
    // Assess
    assess('2 buckets, direct mode', rounds, ['ingest'], DIRECT);
  });
  it('compaction due: a cold commit sends the jobs it queues in one request and records them; later ones find them queued', {
    timeout: 240_000,
  }, async () => {
    // Prepare: a 2-bucket table due for compaction from 2 sorted runs on (universal compaction's
    // pick: a bucket is due at 2 or 3 runs, by its files' sizes), with one commit (one run per
    // bucket); each batch through a new ingest container, each commit through a new one.
    powertoolsEnv();
    const d = await deploy();
    await createOrders(d, { 'num-sorted-run.compaction-trigger': '2' });
    const env = d.env('queue');
    const coldCommit = async (i: number): Promise<{ requests: Request[]; sent: number[] }> => {
      const ingest = await coldContainer(env);
      await sendBodies(d.ingestUrl, [orderRows(i)]);
      expect(await drain(d.ingestUrl, ingest.ingest)).toHaveLength(1);
      const commit = await coldContainer(env);
      expect(await drain(d.commitUrl, commit.commit)).toHaveLength(1);
      const sent = (await takeAll(d.compactUrl)).map((b) => (JSON.parse(b) as { bucket: number }).bucket);
      return { requests: commit.requests, sent };
    };
    await coldCommit(0);

    // Act: 3 more cold commits into both buckets, the jobs they send left in the queue
    const commits = [await coldCommit(1), await coldCommit(2), await coldCommit(3)];

    // Assess: each bucket's job sent once, by the commit that found it due first, in one
    // SendMessageBatch with the others it queued; no "job queued" marker looked up or written (a
    // HEAD per due bucket per commit, and a PUT per job sent, before): the snapshots record the
    // jobs queued (lib/snapshot/queued-jobs.ts). The first commit's base is current (the hint
    // names it): the cold commit's budget, and the send when it queued any.
    const lines = commits.map(
      ({ requests, sent }, i) =>
        `cold commit ${i + 1} (jobs sent for buckets [${sent.join(', ')}]): ${requests.length} requests\n` +
        requests.map((q) => `  ${label(q, i + 1)}  ${q.key.replace(/^.*?\/orders\//, '')}`).join('\n'),
    );
    console.log(lines.join('\n'));
    expect(commits.flatMap((c) => c.sent).sort()).toEqual([0, 1]);
    commits.forEach(({ requests, sent }, i) => {
      expect(
        requests.filter((r) => r.key.includes('/compaction/')),
        lines[i],
      ).toEqual([]);
      const sends = requests.filter((r) => r.service === 'SQS').map((r) => r.command);
      expect(sends, lines[i]).toEqual(sent.length > 0 ? ['SendMessageBatch'] : []);
    });
    const first = commits[0];
    expect(labelled(first.requests, 1, 0, lines[0])).toEqual(
      [...QUEUED.coldCommit, ...(first.sent.length > 0 ? ['SQS:SendMessageBatch'] : [])].sort(),
    );
    const latest = await (await reopen(d)).snapshots.latest();
    expect(
      JSON.parse(latest!.properties![QUEUED_JOBS_PROPERTY])
        .map((j: unknown[]) => j[1])
        .sort(),
    ).toEqual([0, 1]);
  });

  it('a cold compaction invocation reads each metadata object once and looks the latest snapshot up once', {
    timeout: 240_000,
  }, async () => {
    // Prepare: a 2-bucket table where 2 sorted runs call for compaction, 3 commits into both
    // buckets by one container (its jobs queued), then a new compaction container.
    const { d, env } = await compactionDueHistory();
    const cold = await coldContainer(env);

    // Act
    const jobs = await drain(d.compactUrl, cold.compact, 10);

    // Assess: the jobs ran; no LIST, no metadata object read twice, the LATEST hint read once
    const shown = cold.requests.map((r) => `  ${label(r, 0)}  ${r.key.replace(/^.*?\/orders\//, '')}`).join('\n');
    console.log(`requests of a cold compaction invocation (${jobs.length} jobs): ${cold.requests.length}\n${shown}`);
    expect(jobs.length).toBeGreaterThan(0);
    await expect((await reopen(d)).snapshots.latest()).resolves.toMatchObject({ commitKind: 'COMPACT' });
    expect(cold.requests.filter((r) => r.command.startsWith('List'))).toEqual([]);
    const gets = cold.requests
      .filter((r) => r.command === 'GetObject' && /\/(snapshot|manifest|schema)\//.test(r.key))
      .map((r) => r.key);
    expect(
      gets.filter((k, i) => gets.indexOf(k) !== i),
      `read twice:\n${shown}`,
    ).toEqual([]);
  });

  it("a cold commit on a compaction's snapshot reads that one snapshot: it carries the window's checkpoint", {
    timeout: 240_000,
  }, async () => {
    // Prepare: a 2-bucket table where 2 sorted runs call for compaction, 3 commits into both
    // buckets, their jobs run: the latest snapshot is a compaction's
    const { d, env, history } = await compactionDueHistory();
    await drain(d.compactUrl, history.compact, 10);
    const table = await reopen(d);
    const base = (await table.snapshots.latest())!;
    expect(base.commitKind).toBe('COMPACT');
    // The hint the cold lookup starts from (warm committers leave it behind): it reads that snapshot
    const hint = Number(new TextDecoder().decode((await table.store.get(latestHintKey(table.path))).body));
    const ingest = await coldContainer(env);
    await sendBodies(d.ingestUrl, [orderRows(3)]);
    expect(await drain(d.ingestUrl, ingest.ingest)).toHaveLength(1);

    // Act
    const cold = await coldContainer(env);
    expect(await drain(d.commitUrl, cold.commit)).toHaveLength(1);
    const sent = await takeAll(d.compactUrl);

    // Assess: no snapshot read but the base (and the one the hint names, by the lookup): the
    // deduplication window is read from the compaction's snapshot, which carries the last group
    // commit's checkpoint (lib/table/window-checkpoint.ts carriedWindowCheckpoint); before, the
    // window read the group commit's snapshot below it too (one GET more). Beside the lookup,
    // the cold commit's budget (and the send when it queued jobs).
    const shown = cold.requests.map((q) => `  ${label(q, base.id)}  ${q.key.replace(/^.*?\/orders\//, '')}`).join('\n');
    console.log(`cold commit on a compaction's snapshot (hint ${hint}): ${cold.requests.length} requests\n${shown}`);
    const snapshotGets = cold.requests
      .filter((r) => r.command === 'GetObject' && /\/snapshot\/snapshot-\d+$/.test(r.key))
      .map((r) => Number(/(\d+)$/.exec(r.key)![1]));
    expect(snapshotGets.sort(), shown).toEqual([...new Set([hint, base.id])].sort());
    const lookup = (l: string) => /snapshot|LATEST/.test(l);
    expect(
      cold.requests
        .map((r) => label(r, base.id))
        .filter((l) => !lookup(l))
        .sort(),
    ).toEqual(
      [...QUEUED.coldCommit, ...(sent.length > 0 ? ['SQS:SendMessageBatch'] : [])].filter((l) => !lookup(l)).sort(),
    );
  });

  it("a cold commit opens the table at its writer's schema only while that lookup is under a minute old", {
    timeout: 240_000,
  }, async () => {
    // Prepare: a table altered to schema 1 after one commit; one batch at a time through a new
    // ingest container, its commit message as sent (or changed), to a new commit container.
    powertoolsEnv();
    const d = await deploy();
    await createOrders(d);
    const env = d.env('queue');
    const rows = (i: number) => JSON.stringify([{ id: i, status: 'new', amount: i }]);
    const history = await coldContainer(env);
    await sendBodies(d.ingestUrl, [rows(0)]);
    await drain(d.ingestUrl, history.ingest);
    await drain(d.commitUrl, history.commit);
    await alterTable(await reopen(d), [
      { kind: 'add-column', name: 'note', type: parseSchemaText('n STRING')[0].type },
    ]);
    const commitOf = async (i: number, change: (m: Record<string, unknown>) => void) => {
      const ingest = await coldContainer(env);
      await sendBodies(d.ingestUrl, [rows(i)]);
      await drain(d.ingestUrl, ingest.ingest);
      const [body] = await takeAll(d.commitUrl);
      const message = JSON.parse(body) as Record<string, unknown>;
      change(message);
      await sendBodies(d.commitUrl, [JSON.stringify(message)]);
      const commit = await coldContainer(env);
      expect(await drain(d.commitUrl, commit.commit)).toHaveLength(1);
      const opened = commit.requests.filter(
        (r) => r.service === 'DynamoDB' || (r.service === 'S3' && r.key.includes('/schema/')),
      );
      return { message, opened: opened.map((r) => label(r, 0)) };
    };

    // Act
    const young = await commitOf(1, () => {});
    const old = await commitOf(2, (m) => {
      m.schemaSeenAt = (m.schemaSeenAt as number) - 61_000;
    });
    const unknown = await commitOf(3, (m) => delete m.schemaSeenAt);
    const future = await commitOf(4, (m) => {
      m.schemaSeenAt = Date.now() + 60_000;
    });

    // Assess: the writer's own schema (1, after the alter), one GET, while its lookup is young;
    // through the catalog (the item, schema-0, then the newest found by HEADs) otherwise.
    expect(young.message.schemaId).toBe(1);
    expect(young.opened).toEqual(['S3:GetObject schema-1']);
    const throughCatalog = ['DynamoDB:GetItem', 'S3:GetObject schema-0', 'S3:GetObject schema-1'];
    for (const { opened } of [old, unknown, future]) {
      expect(opened.filter((l) => !l.startsWith('S3:HeadObject')).sort()).toEqual(throughCatalog);
      expect(opened).toContain('S3:HeadObject schema-1');
    }
    const latest = await (await reopen(d)).commitSnapshots.latest();
    expect(latest?.schemaId).toBe(1);
    expect(latest?.totalRecordCount).toBe(5);
  });
});
