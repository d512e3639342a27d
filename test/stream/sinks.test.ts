/**
 * The built-in sinks: JSON lines, user callbacks, and another varve table (streaming ETL) that
 * stays exactly-once through crashes between its commit and the acknowledgement (seeded).
 */
import { batchIdentifiersOf } from '../../lib/snapshot/commit-identifier.js';
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { InjectedFaultError } from '../../lib/errors.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { discover, ensureConsumer } from '../../lib/stream/discovery.js';
import type { StreamSink } from '../../lib/stream/delivery.js';
import { MemoryQueue } from '../../lib/stream/memory-queue.js';
import { SplitReader } from '../../lib/stream/reader.js';
import { callbackSink, jsonlSink, tableSink, type Change } from '../../lib/stream/sinks.js';
import { rng, testSeed } from '../helpers/random.js';
import { LogLines, SPLIT_FAILED } from '../helpers/log-lines.js';
import { makeTable, pump, put, stateOf } from './fixtures.js';

describe('jsonlSink and callbackSink', () => {
  it('print one JSON line per change, and hand callbacks row objects with kinds', async () => {
    // Prepare
    const t = await makeTable({ bucket: '1' });
    await ensureConsumer(t, 'c', { mode: 'earliest' });
    await put(t, [[1, 'a']]);
    await put(t, [[1, null]], { delete: true });
    let text = '';
    const seen: Change[] = [];
    const both: StreamSink = {
      async write(b) {
        await jsonlSink((s) => (text += s)).write(b);
        await callbackSink((changes) => void seen.push(...changes)).write(b);
      },
    };
    const queue = new MemoryQueue();
    const log = new LogLines();
    // Act
    await pump(t, queue, new SplitReader({ table: t, consumerId: 'c', queue, sink: both, log: log.add }), 'c');
    // Assess
    expect(text).toBe(
      '{"snapshot":1,"kind":"+I","row":{"k":1,"v":"a"}}\n{"snapshot":2,"kind":"-D","row":{"k":1,"v":null}}\n',
    );
    expect(seen.map((c) => [c.snapshot, c.kind, c.row.k, c.bucket])).toEqual([
      [1, '+I', 1n, 0],
      [2, '-D', 1n, 0],
    ]);
    log.expectOnly();
  });
});

describe('tableSink', () => {
  it.each(['none', 'lookup'] as const)(
    'streams a %s table into another exactly once through crashes between commit and ack',
    async (producer) => {
      // Prepare
      const seed = testSeed(`table-sink-${producer}`);
      const r = rng(seed);
      const store = new MemoryStore();
      const source = await makeTable({ bucket: '3', 'changelog-producer': producer }, { store, name: 'db.source' });
      const target = await new FolderCatalog(store).createTable('db.target', {
        fields: parseSchemaText('k BIGINT, v STRING'),
        primaryKeys: ['k'],
        options: { bucket: '2' },
      });
      await ensureConsumer(source, 'etl', { mode: 'earliest' });
      let crashes = 0;
      const inner = tableSink(target);
      // A reader process that dies after the sink's commit, before progress and acknowledgement.
      const crashing: StreamSink = {
        async write(batch) {
          await inner.write(batch);
          if (r.chance(0.3)) {
            crashes++;
            throw new InjectedFaultError(`crash after committing ${batch.splitId}`);
          }
        },
      };
      const queue = new MemoryQueue({ maxReceiveCount: 1_000, faults: { ack: () => r.chance(0.2) }, visibilityMs: 10 });
      // The reader's own failure budget as high as the queue's: this test crashes readers, it never dead-letters.
      const log = new LogLines();
      const reader = new SplitReader({
        table: source,
        consumerId: 'etl',
        queue,
        sink: crashing,
        backoff: { baseMs: 0, maxMs: 0 },
        failureBudget: 1_000,
        log: log.add,
      });
      // Act
      for (let i = 0; i < 15; i++) {
        const entries: Array<[number, string | null]> = [];
        for (let n = r.int(1, 6); n > 0; n--) entries.push([r.int(0, 15), `w${i}`]);
        await put(source, entries, { delete: r.chance(0.25) });
        await discover(source, queue, 'etl');
        await reader.poll();
      }
      await pump(source, queue, reader, 'etl');
      // Assess
      expect(crashes).toBeGreaterThan(0);
      expect(await stateOf(target)).toEqual(await stateOf(source));
      const identifiers: string[] = [];
      for (const id of await target.snapshots.listIds()) {
        const s = await target.snapshots.read(id);
        // Splits committed together by the in-process group commit are listed in varve.identifiers.
        if (s.commitKind === 'APPEND')
          identifiers.push(...(batchIdentifiersOf(s).length > 0 ? batchIdentifiersOf(s) : [s.commitIdentifier]));
      }
      expect(identifiers.length).toBeGreaterThan(0);
      expect(new Set(identifiers).size).toBe(identifiers.length);
      expect(identifiers.every((id) => id.startsWith('etl/'))).toBe(true);
      // Each crash was logged as its split's own failure; lost acknowledgements are logged; nothing else.
      expect(log.matching(/its own error \(InjectedFaultError: crash after committing/)).toHaveLength(crashes);
      log.expectOnly(SPLIT_FAILED, /acknowledging \d+ split\(s\) of group .* failed \(injected ack failure/);
    },
  );
});

describe('tableSink without a dedup window', () => {
  it('a split delivered again after 120 other commits to the target counts once on an aggregation table', async () => {
    // Prepare
    const store = new MemoryStore();
    const catalog = new FolderCatalog(store);
    const source = await catalog.createTable('db.src', {
      fields: parseSchemaText('k BIGINT, n BIGINT'),
      primaryKeys: ['k'],
      options: { bucket: '1' },
    });
    const target = await catalog.createTable('db.agg', {
      fields: parseSchemaText('k BIGINT, n BIGINT'),
      primaryKeys: ['k'],
      options: { bucket: '1', 'merge-engine': 'aggregation', 'fields.n.aggregate-function': 'sum' },
    });
    await ensureConsumer(source, 'etl', { mode: 'earliest' });
    await source.write([{ k: 1n, n: 5n }]);
    const batches: Parameters<StreamSink['write']>[0][] = [];
    const queue = new MemoryQueue();
    const log = new LogLines();
    await pump(
      source,
      queue,
      new SplitReader({
        table: source,
        consumerId: 'etl',
        queue,
        sink: { write: async (b) => void batches.push(b) },
        log: log.add,
      }),
      'etl',
    );
    log.expectOnly();
    const sink = tableSink(target);
    await sink.write(batches[0]);
    for (let i = 0; i < 120; i++) await target.write([{ k: 2n, n: 1n }]);
    // Act: the same split again (a reader that crashed before its acknowledgement), 121 commits later
    await sink.write(batches[0]);
    // Assess
    const rows = (await target.read()).toArray().map((r) => [r.k, r.n]);
    expect(rows).toEqual([
      [1n, 5n],
      [2n, 120n],
    ]);
  });
});
