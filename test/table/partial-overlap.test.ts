/**
 * The same input delivered twice at once in two batch compositions (an SQS standard queue's
 * duplicate delivery, or a redelivery while the first invocation still runs: the ingest-side check
 * sees neither). The batches' sources then overlap only in part, and the batch that comes second
 * must not land its copy of the overlapping sources' rows: on an append table they would be rows
 * twice, on a primary-key table a stale row winning over a newer update of its key. In direct mode
 * the ingest lands the other messages again without them; through the group commit the batch is
 * refused whole, naming the sources to send again (the test sends them, as a user would).
 */
import { describe, expect, it } from 'vitest';
import { PartiallyLandedError } from '../../lib/errors.js';
import type { CommitMessage } from '../../lib/table/commit-message.js';
import { GroupCommit, type QueuedCommit } from '../../lib/table/group-commit.js';
import { ingestMessages, type IngestMessage } from '../../lib/table/ingest-messages.js';
import { SOURCES_PROPERTY } from '../../lib/table/recent-batches.js';
import type { Table } from '../../lib/table/table.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';
import { readRows, testTable } from '../helpers/tables.js';

type Kind = 'primary-key' | 'append';
type Mode = 'queue' | 'direct';

interface Input {
  /** Message id → its records (distinct keys; `v` names the message the record was first sent in). */
  bodies: Map<string, Array<{ k: number; v: string }>>;
  /** Refusals of the group commit, by the sources they name to send again. */
  refusals: PartiallyLandedError[];
  /** Messages whose ingest failed (a commit message not sent): the queue delivers them again. */
  retry: Set<string>;
}

/** Which snapshots each source landed in, over every snapshot of the table. */
async function landings(table: Table): Promise<Map<string, number[]>> {
  const where = new Map<string, number[]>();
  const latest = (await table.snapshots.latestId()) ?? 0;
  for (let id = 1; id <= latest; id++) {
    const s = (await table.snapshots.tryRead(id))!;
    const list = s.properties?.[SOURCES_PROPERTY];
    for (const x of list ? (JSON.parse(list) as string[]) : []) where.set(x, [...(where.get(x) ?? []), id]);
  }
  return where;
}

/** One table's run: random deliveries of messages, redelivered in other compositions, committed in random runs. */
async function run(seed: number, kind: Kind, mode: Mode): Promise<void> {
  const r = rng(seed);
  const table = await testTable({
    schema: 'k BIGINT, v STRING',
    ...(kind === 'primary-key' ? { primaryKeys: ['k'] } : {}),
    options: { bucket: kind === 'primary-key' ? String(r.int(1, 2)) : '-1' },
  });
  const input: Input = { bodies: new Map(), refusals: [], retry: new Set() };
  let sendFails = 0.15;
  const backlog: QueuedCommit[] = [];
  let queuedCount = 0;
  // The send of a commit message fails now and then, after its batch's registration (a throttled
  // queue, a writer stopped by its timeout): the ingest fails and its messages come back.
  const enqueue = async (message: CommitMessage) => {
    if (r.chance(sendFails)) throw new Error('injected: the commit message was not sent');
    backlog.push({ id: `q${++queuedCount}`, message });
  };
  const deliver = async (messages: IngestMessage[]) => {
    const result = await ingestMessages(table, messages, {
      land: (commitIdentifier, sources) => ({
        commitUser: 'ingest',
        commitIdentifier,
        sources,
        ...(mode === 'queue' ? { enqueue } : {}),
      }),
      reject: async (rejects) => expect(rejects, `seed ${seed}`).toEqual([]),
      queued: mode === 'queue',
    }).catch((e: unknown) => ({ failed: messages.map((m) => m.id), error: e }));
    for (const id of result.failed) input.retry.add(id);
    if (result.failed.length > 0) expect(String(result.error), `seed ${seed}`).toMatch(/injected/);
  };
  const commitSome = async (all: boolean) => {
    // The commit queue in order: a prefix of it, in one or two group commits (function invocations).
    const taken = backlog.splice(0, all ? backlog.length : r.int(0, backlog.length));
    const cut = r.int(0, taken.length);
    for (const part of [taken.slice(0, cut), taken.slice(cut)]) {
      if (part.length === 0) continue;
      const group = new GroupCommit(table, part);
      for (const q of part) {
        const outcome = await group.settle(q.id);
        const refused = outcome.refused.get(q.id);
        if (refused === undefined) continue;
        expect(refused, `seed ${seed}: ${refused.message}`).toBeInstanceOf(PartiallyLandedError);
        if (!input.refusals.includes(refused as PartiallyLandedError))
          input.refusals.push(refused as PartiallyLandedError);
      }
    }
  };

  await deliverRandomly(r, input, deliver, commitSome);
  sendFails = 0;
  const retried = [...input.retry];
  input.retry.clear();
  if (retried.length > 0)
    await deliver(retried.map((id) => ({ id, body: JSON.stringify(input.bodies.get(id)), redelivered: true })));
  await commitSome(true);
  // The user sends again what a refusal named and did not land since, as new messages.
  const landedBefore = await landings(table);
  const resend = [...new Set(input.refusals.flatMap((e) => e.others))]
    .map((s) => s.replace(/^sqs:/, ''))
    .filter((id) => !landedBefore.has(`sqs:${id}`));
  if (resend.length > 0) {
    for (const id of resend) input.bodies.set(`${id}+`, input.bodies.get(id)!);
    await deliver(
      resend.map((id) => ({ id: `${id}+`, body: JSON.stringify(input.bodies.get(id)), redelivered: false })),
    );
    await commitSome(true);
  }
  if (mode === 'direct') expect(input.refusals, `seed ${seed}`).toEqual([]);
  await assess(seed, table, kind, input);
}

/** 5-9 rounds of 1-3 deliveries: new messages and earlier ones again, in new compositions. */
async function deliverRandomly(
  r: Rng,
  input: Input,
  deliver: (messages: IngestMessage[]) => Promise<void>,
  commitSome: (all: boolean) => Promise<void>,
): Promise<void> {
  let next = 0;
  const sent: string[] = [];
  for (let round = r.int(5, 9); round > 0; round--) {
    for (let d = r.int(1, 3); d > 0; d--) {
      const ids = new Set<string>();
      for (let n = r.int(1, 3); n > 0; n--) {
        const id = `m${++next}`;
        const keys = [...new Set(Array.from({ length: r.int(1, 3) }, () => r.int(1, 6)))];
        input.bodies.set(
          id,
          keys.map((k) => ({ k, v: id })),
        );
        ids.add(id);
      }
      for (let n = r.int(0, 2); n > 0 && sent.length > 0; n--) ids.add(r.pick(sent));
      // Failed ones come back (receive count raised), in this delivery or a later one.
      const back = new Set([...input.retry].filter(() => r.chance(0.7)));
      for (const id of back) ids.add(id), input.retry.delete(id);
      const order = [...ids].sort(() => r.next() - 0.5);
      // A message sent before comes with its receive count raised (the ingest checks it) or, a
      // duplicate delivered at once or one whose first invocation had not yet queued it, unseen.
      await deliver(
        order.map((id) => ({
          id,
          body: JSON.stringify(input.bodies.get(id)),
          redelivered: back.has(id) || (sent.includes(id) && r.chance(0.5)),
        })),
      );
      for (const id of order) if (!sent.includes(id)) sent.push(id);
    }
    await commitSome(false);
  }
}

/** Every message landed once (itself or as sent again), and the table holds exactly that. */
async function assess(seed: number, table: Table, kind: Kind, input: Input): Promise<void> {
  const where = await landings(table);
  // Where each message landed first: the rows are checked against that, then that it landed there only.
  const landedAt = new Map([...where].map(([s, [at]]) => [s.replace(/^sqs:/, ''), at]));
  await assessRows(seed, table, kind, input, landedAt);
  for (const [source, snapshots] of where) expect(snapshots, `seed ${seed}: ${source}`).toHaveLength(1);
  for (const id of input.bodies.keys()) {
    if (id.endsWith('+')) continue;
    const landed = [id, `${id}+`].filter((x) => landedAt.has(x));
    expect(landed, `seed ${seed}: message ${id} lands exactly once`).toHaveLength(1);
  }
}

/** The table holds the rows of each message once (append), and each key the value of its newest landing (primary key). */
async function assessRows(
  seed: number,
  table: Table,
  kind: Kind,
  input: Input,
  landedAt: Map<string, number>,
): Promise<void> {
  const rows = (await readRows(table)).map((row) => ({ k: Number(row.k), v: String(row.v) }));
  if (kind === 'append') {
    const expected = [...landedAt.keys()].flatMap((id) => input.bodies.get(id)!);
    const text = (xs: Array<{ k: number; v: string }>) => xs.map((x) => `${x.k}:${x.v}`).sort();
    expect(text(rows), `seed ${seed}`).toEqual(text(expected));
    return;
  }
  // Each key's value comes from a message holding it in the newest snapshot any of them landed in.
  const newest = new Map<number, { at: number; values: Set<string> }>();
  for (const [id, at] of landedAt) {
    for (const { k, v } of input.bodies.get(id)!) {
      const seen = newest.get(k);
      if (!seen || at > seen.at) newest.set(k, { at, values: new Set([v]) });
      else if (at === seen.at) seen.values.add(v);
    }
  }
  expect(rows.map((x) => x.k).sort(), `seed ${seed}`).toEqual([...newest.keys()].sort());
  for (const { k, v } of rows) expect([...newest.get(k)!.values], `seed ${seed}: key ${k} is ${v}`).toContain(v);
}

describe('batches whose sources landed in part (randomized, seed printed)', () => {
  for (const mode of ['queue', 'direct'] as const)
    for (const kind of ['primary-key', 'append'] as const)
      it(`${mode} mode, ${kind} table: every message lands once, no stale row wins`, async () => {
        const seed = testSeed(`partial overlap ${mode} ${kind}`);
        for (let i = 0; i < 6; i++) await run(seed + i, kind, mode);
      });
});
