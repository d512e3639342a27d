/**
 * The local runtime: commits reach consumers through the in-process commit event (no polling),
 * changelog producers' changes arrive, and a consumer restarted in a fresh process (new store
 * handle, catalog, queue and runtime over the same warehouse folder) resumes exactly.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { expireConsumers } from '../../lib/maintenance/expire-consumers.js';
import { LocalRuntime } from '../../lib/runtime/local-runtime.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { parseAddColumn } from '../../lib/schema/schema-evolution.js';
import { LocalStore } from '../../lib/store/local-store.js';
import { readConsumer } from '../../lib/snapshot/consumer.js';
import { StreamScan } from '../../lib/stream/stream-scan.js';
import type { Table } from '../../lib/table/table.js';
import { startVarve } from '../helpers/cli-process.js';
import { rng, testSeed } from '../helpers/random.js';
import { DEAD_LETTER, LogLines, SPLIT_FAILED } from '../helpers/log-lines.js';
import { drain, makeTable, put, RecordingSink, show } from '../stream/fixtures.js';

/**
 * Resolves once `check()` holds, polling every few ms, however long that takes: the test's timeout
 * is the backstop (a deadline here would fail a slow run on a loaded machine, not a wrong one).
 */
async function eventually(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, 2));
}

describe('LocalRuntime', () => {
  it('delivers a commit to its consumer through the commit event, with the backstop timer off', async () => {
    // Prepare
    const t = await makeTable();
    const log = new LogLines();
    const runtime = new LocalRuntime({
      discoveryIntervalMs: 0,
      compactionIntervalMs: 0,
      expiryIntervalMs: 0,
      log: log.add,
    });
    const sink = new RecordingSink();
    await runtime.addConsumer({ table: t, consumerId: 'c', sink, stream: { mode: 'latest' } });
    await runtime.start();
    try {
      // Act
      await put(t, [[1, 'a']]);
      await eventually(() => sink.changes.length === 1);
      await put(t, [[1, 'b']]);
      await eventually(() => sink.changes.length === 2);
      // Assess
      expect(sink.changes.map(show)).toEqual(['+I 1=a', '+I 1=b']);
    } finally {
      await runtime.stop();
    }
    log.expectOnly();
  });

  it('a consumer crossing an alter gets one schema-change event, then rows in the new schema', async () => {
    // Prepare
    const t = await makeTable();
    const log = new LogLines();
    const runtime = new LocalRuntime({
      discoveryIntervalMs: 0,
      compactionIntervalMs: 0,
      expiryIntervalMs: 0,
      log: log.add,
    });
    const sink = new RecordingSink();
    await runtime.addConsumer({ table: t, consumerId: 'c', sink, stream: { mode: 'latest' } });
    await runtime.start();
    try {
      await put(t, [[1, 'a']]);
      await eventually(() => sink.changes.length === 1);
      // Act
      const { table: altered } = await t.alter([
        parseAddColumn('n INT'),
        { kind: 'rename-column', from: 'v', to: 'label' },
      ]);
      await altered.write([{ k: 2, label: 'b', n: 7 }]);
      await eventually(() => sink.changes.length === 2);
      await altered.write([{ k: 3, label: 'c', n: 8 }]);
      await eventually(() => sink.changes.length === 3);
      // Assess
      const events = sink.batches.filter((b) => b.schemaChange).map((b) => b.schemaChange!);
      expect(events.map(({ snapshot, from, to, changes }) => ({ snapshot, from, to, changes }))).toEqual([
        { snapshot: 3, from: 0, to: 1, changes: ['rename column v to label', 'add column n INT'] },
      ]);
      expect(sink.changes.map((c) => c.row)).toEqual([
        { k: 1n, v: 'a' },
        { k: 2n, label: 'b', n: 7 },
        { k: 3n, label: 'c', n: 8 },
      ]);
    } finally {
      await runtime.stop();
    }
    log.expectOnly();
  });

  it('delivers a commit made by another OS process through the snapshot folder watch, with the backstop timer off', async () => {
    // Prepare: a warehouse folder, and a consumer in this process with no polling at all.
    const warehouse = mkdtempSync(join(tmpdir(), 'varve-watch-'));
    const t = await makeTable({}, { store: new LocalStore(warehouse) });
    const log = new LogLines();
    const runtime = new LocalRuntime({
      discoveryIntervalMs: 0,
      compactionIntervalMs: 0,
      expiryIntervalMs: 0,
      log: log.add,
    });
    const sink = new RecordingSink();
    await runtime.addConsumer({ table: t, consumerId: 'c', sink, stream: { mode: 'latest' } });
    await runtime.start();
    try {
      // Act: `varve write` in a child process (its commit event never reaches this process). Waited
      // for asynchronously, as another process runs: a blocking wait (spawnSync) stopped this
      // process's timers, and a child slower than the 30 s lease (a loaded machine) left the lease
      // unrenewed, so the consumer stopped and the test timed out (once, at load 23).
      const rows = join(mkdtempSync(join(tmpdir(), 'varve-watch-rows-')), 'rows.jsonl');
      writeFileSync(rows, '{"k": 7, "v": "from-another-process"}\n');
      const w = startVarve(warehouse, ['write', 'db.t', '--format', 'jsonl', rows]);
      expect(await w.exited, w.err()).toBe(0);
      // Assess
      await eventually(() => sink.changes.length === 1);
      expect(sink.changes.map(show)).toEqual(['+I 7=from-another-process']);
    } finally {
      await runtime.stop();
    }
    log.expectOnly();
    // Sized by work: a CLI process on a busy 2-core machine can take a minute to start.
  }, 300_000);

  it('streams the changelog of a lookup table: +I, -U/+U, -D', async () => {
    // Prepare
    const t = await makeTable({ 'changelog-producer': 'lookup' });
    const log = new LogLines();
    const runtime = new LocalRuntime({ log: log.add });
    const sink = new RecordingSink();
    await runtime.addConsumer({ table: t, consumerId: 'c', sink });
    await runtime.start();
    try {
      // Act
      await put(t, [[1, 'a']]);
      await put(t, [[1, 'b']]);
      await put(t, [[1, null]], { delete: true });
      await runtime.idle(600_000);
      // Assess
      expect(sink.changes.map(show)).toEqual(['+I 1=a', '-U 1=a', '+U 1=b', '-D 1=b']);
      expect(await runtime.lag()).toMatchObject([{ consumerId: 'c', snapshots: 0 }]);
    } finally {
      await runtime.stop();
    }
    log.expectOnly();
  });

  it('resumes a consumer restarted in a fresh process exactly: nothing acknowledged repeated, nothing skipped', async () => {
    // Prepare
    const seed = testSeed('runtime-restart');
    const r = rng(seed);
    const dir = mkdtempSync(join(tmpdir(), 'varve-restart-'));
    const open = async (): Promise<Table> => new FolderCatalog(new LocalStore(dir)).getTable('db.t');
    await new FolderCatalog(new LocalStore(dir)).createTable('db.t', {
      fields: parseSchemaText('k BIGINT, v STRING'),
      primaryKeys: ['k'],
      options: { bucket: '4' },
    });
    const writes = async (table: Table, from: number, n: number) => {
      for (let i = from; i < from + n; i++) {
        const entries: Array<[number, string]> = [];
        // Key 0 in every other write: its bucket is the one process 1 cannot deliver.
        if (i % 2 === 0) entries.push([0, `w${i}`]);
        for (let j = r.int(1, 4); j > 0; j--) entries.push([r.int(1, 20), `w${i}`]);
        await put(table, entries);
      }
    };
    const slow = (maxDelayMs: number) => {
      const sink = new RecordingSink();
      const write = sink.write.bind(sink);
      sink.write = async (b) => {
        await new Promise((res) => setTimeout(res, r.int(0, maxDelayMs)));
        await write(b);
      };
      return sink;
    };
    // Act: process 1 streams while writes go on (key 0's bucket failing), and stops in the middle of them
    const first = slow(10);
    // The bucket of key 0 never gets through in process 1.
    let bucketOf0 = -1;
    first.failNext = (b) => {
      const has0 = (b.data.getChild('k')!.toArray() as BigInt64Array).includes(0n);
      if (has0) bucketOf0 = b.bucket;
      return has0;
    };
    const log1 = new LogLines();
    const p1 = {
      table: await open(),
      runtime: new LocalRuntime({
        discoveryIntervalMs: 50,
        compactionIntervalMs: 0,
        expiryIntervalMs: 0,
        log: log1.add,
      }),
    };
    const consumer1 = await p1.runtime.addConsumer({
      table: p1.table,
      consumerId: 'c',
      sink: first,
      stream: { mode: 'earliest' },
      readers: 2,
    });
    await p1.runtime.start();
    await writes(p1.table, 0, 12);
    const backlog = await consumer1.queue.depth();
    await p1.runtime.stop();
    const stoppedAt = await readConsumer(p1.table.store, p1.table.path, 'c');
    // more commits while no one reads; then process 2 starts from nothing but the warehouse
    const offline = await open();
    await writes(offline, 12, 6);
    const second = slow(8);
    const log2 = new LogLines();
    const p2 = {
      table: await open(),
      runtime: new LocalRuntime({ compactionIntervalMs: 0, expiryIntervalMs: 0, log: log2.add }),
    };
    await p2.runtime.addConsumer({ table: p2.table, consumerId: 'c', sink: second, readers: 3 });
    await p2.runtime.start();
    await p2.runtime.idle(600_000);
    await p2.runtime.stop();
    // Assess
    const expected = await drain(new StreamScan(offline, { mode: 'earliest' }), offline, true);
    const delivered = [...first.changes, ...second.changes].map((c) => `${c.snapshot}: ${show(c)}`);
    expect(first.changes.length).toBeGreaterThan(0);
    // Process 1 stopped with undelivered splits in its queue (waiting or dead-lettered), lost with it.
    expect(backlog.visible + backlog.inFlight + backlog.deadLettered).toBeGreaterThan(0);
    // Other buckets had delivered past the consumer's position: process 2 must not repeat those.
    expect(first.changes.some((c) => c.snapshot >= stoppedAt!.nextSnapshot)).toBe(true);
    expect([...delivered].sort()).toEqual([...expected].sort());
    for (let k = 0; k <= 20; k++) {
      const mine = delivered.filter((l) => l.split(' ')[2].startsWith(`${k}=`));
      const want = expected.filter((l) => l.split(' ')[2].startsWith(`${k}=`));
      expect(mine, `key ${k}`).toEqual(want);
    }
    // Process 1 logged the failures of key 0's bucket (and dead-lettered its head, should the writes
    // have outlasted its budget); nothing of another bucket. Process 2 logged nothing.
    const failed = [...log1.matching(SPLIT_FAILED), ...log1.matching(DEAD_LETTER)];
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.filter((l) => !l.includes(`bucket ${bucketOf0}`))).toEqual([]);
    log1.expectOnly(SPLIT_FAILED, DEAD_LETTER);
    log2.expectOnly();
  });
});

describe('LocalRuntime and an expired consumer', () => {
  it('stops the consumer and says why instead of re-creating it when its id expires while it runs', async () => {
    // Prepare
    const t = await makeTable({ 'consumer.expiration-time': '1 s' });
    const log = new LogLines();
    const runtime = new LocalRuntime({
      discoveryIntervalMs: 0,
      compactionIntervalMs: 0,
      expiryIntervalMs: 0,
      log: log.add,
    });
    const sink = new RecordingSink();
    const consumer = await runtime.addConsumer({ table: t, consumerId: 'c', sink, stream: { mode: 'earliest' } });
    await runtime.start();
    try {
      await put(t, [[1, 'a']]);
      await eventually(() => sink.changes.length === 1);
      await runtime.stop(); // it stops reading, its position stays behind the next write
      await put(t, [[2, 'b']]);
      expect((await expireConsumers(t, { now: Date.now() + 60_000 })).expired).toEqual(['c']);
      // Act: the same runtime starts again and its discovery meets the expired id
      await runtime.start();
      await eventually(() => consumer.failure !== undefined);
      // Assess
      expect(runtime.failure()?.name).toBe('ConsumerExpiredError');
      expect(await readConsumer(t.store, t.path, 'c')).toBeUndefined();
      expect(log.matching(/consumer c of db.t stopped: consumer c of db.t expired/)).toHaveLength(1);
      await expect(runtime.idle(600_000)).rejects.toThrow(/expired/);
    } finally {
      await runtime.stop();
    }
    log.expectOnly(/consumer c of db.t stopped: consumer c of db.t expired/);
  });
});
