/**
 * The table UUID: given at creation in schema-0 and carried by later schemas; consumers and leases
 * record it; a consumer or lease left in the folder by a dropped table is never inherited by a new
 * table of the same name; a reader of the dropped table stops without writing; a table from
 * before UUIDs is identified by its schema-0 etag.
 */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { TableNotFoundError } from '../../lib/errors.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { readConsumer, writeConsumer } from '../../lib/snapshot/consumer.js';
import { fromUtf8, listAll, utf8 } from '../../lib/store/object-store.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { discover, ensureConsumer } from '../../lib/stream/discovery.js';
import { MemoryQueue } from '../../lib/stream/memory-queue.js';
import { SplitReader } from '../../lib/stream/reader.js';
import { LogLines, SPLIT_FAILED } from '../helpers/log-lines.js';
import { ConsumerLeaseHandle, leaseKey, readLease } from '../../lib/stream/lease.js';
import { tableIdentity } from '../../lib/stream/table-identity.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function create(catalog: FolderCatalog) {
  const table = await catalog.createTable('db.t', {
    fields: parseSchemaText('id INT NOT NULL, v STRING'),
    primaryKeys: ['id'],
  });
  await table.write([{ id: 1, v: 'a' }]);
  return table;
}

describe('a table UUID', () => {
  it('is given at creation, kept by alters, differs for a re-created table, and is what consumers and leases record', async () => {
    const store = new MemoryStore();
    const catalog = new FolderCatalog(store);
    const table = await create(catalog);
    const uuid = table.schema.tableUuid!;
    expect(uuid).toMatch(UUID);
    expect(await tableIdentity(table)).toBe(uuid);
    const altered = await table.alter([{ kind: 'update-comment', comment: 'c' }]);
    expect(altered.schema.tableUuid).toBe(uuid);
    expect((await catalog.getTable('db.t')).schema.tableUuid).toBe(uuid);

    const consumer = await ensureConsumer(table, 'c1');
    expect(consumer.tableUuid).toBe(uuid);
    const lease = new ConsumerLeaseHandle(store, table.path, 'c1', { tableUuid: uuid });
    await lease.acquire();
    expect((await readLease(store, table.path, 'c1'))!.lease.tableUuid).toBe(uuid);

    await catalog.dropTable('db.t');
    const again = await create(catalog);
    expect(again.schema.tableUuid).toMatch(UUID);
    expect(again.schema.tableUuid).not.toBe(uuid);
  });

  it('a consumer and a lease left in the folder by a dropped table are not inherited by the new one', async () => {
    const store = new MemoryStore();
    const catalog = new FolderCatalog(store);
    const table = await create(catalog);
    // What a dropped table of the same name could leave behind (a drop that did not finish).
    await writeConsumer(store, table.path, 'c1', {
      nextSnapshot: 99,
      plannedSnapshot: 98,
      lastUpdated: Date.now(),
      run: 'old-run',
      buckets: {},
      tableUuid: 'dropped-table',
    });
    await store.put(
      leaseKey(table.path, 'c1'),
      utf8(
        JSON.stringify({
          holder: { host: 'elsewhere', pid: 1, readerId: 'r' },
          token: 7,
          expiresAt: Date.now() + 3_600_000,
          acquiredAt: Date.now(),
          tableUuid: 'dropped-table',
        }),
      ),
    );

    const consumer = await ensureConsumer(table, 'c1');
    const lease = new ConsumerLeaseHandle(store, table.path, 'c1', { tableUuid: table.schema.tableUuid });
    await lease.acquire();

    expect(consumer.tableUuid).toBe(table.schema.tableUuid);
    expect(consumer.run).not.toBe('old-run');
    expect(consumer.nextSnapshot).toBe(1); // the new table's start (latest-full), not the leftover's 99
    // The fencing token goes on from the leftover's: never reused.
    expect(lease.token).toBe(8);
  });

  it('a reader of a dropped and re-created table stops with TableNotFoundError and writes nothing', async () => {
    const store = new MemoryStore();
    const catalog = new FolderCatalog(store);
    const old = await create(catalog);
    await catalog.dropTable('db.t');
    const fresh = await create(catalog);

    await expect(ensureConsumer(old, 'c1')).rejects.toThrow(TableNotFoundError);
    await expect(ensureConsumer(old, 'c1')).rejects.toThrow(/dropped and created again/);
    expect(await readConsumer(store, fresh.path, 'c1')).toBeUndefined();
  });

  it("a split that fails while its table is dropped and created again leaves no failure record in the new table's folder", async () => {
    // Prepare: a consumer with one planned split, and a sink that drops and re-creates the table, then fails.
    const store = new MemoryStore();
    const catalog = new FolderCatalog(store);
    const old = await create(catalog);
    await ensureConsumer(old, 'c1', { mode: 'earliest' });
    const queue = new MemoryQueue({ visibilityMs: 1, maxReceiveCount: 100 });
    await discover(old, queue, 'c1');
    const sink = {
      write: async () => {
        await catalog.dropTable('db.t');
        await create(catalog);
        throw new Error('the sink failed');
      },
    };
    const log = new LogLines();
    const reader = new SplitReader({ table: old, consumerId: 'c1', queue, sink, log: log.add });
    // Act
    const polled = await reader.poll({ maxMessages: 10 });
    // Assess: the split failed, its own failure was not recorded into the new table, and the log says why.
    expect(polled.delivered).toBe(0);
    const left = (await listAll(store, `${old.path}/consumer/`)).map((o) => o.key);
    expect(left).toEqual([]);
    expect(log.matching(/dropped and created again/).length).toBeGreaterThan(0);
    log.expectOnly(SPLIT_FAILED, /dropped and created again/);
  });

  it('a table from before UUIDs stays readable and is identified by its schema-0 etag', async () => {
    const store = new MemoryStore();
    const catalog = new FolderCatalog(store);
    const table = await create(catalog);
    const key = `${table.path}/schema/schema-0`;
    const doc = JSON.parse(fromUtf8((await store.get(key)).body)) as Record<string, unknown>;
    delete doc.tableUuid;
    await store.put(key, utf8(JSON.stringify(doc)));

    const legacy = await catalog.getTable('db.t');
    expect(legacy.schema.tableUuid).toBeUndefined();
    expect(await tableIdentity(legacy)).toBe(`schema-0@${(await store.head(key))!.etag}`);
    const consumer = await ensureConsumer(legacy, 'c1');
    expect(consumer.tableUuid).toBeUndefined();
    expect((await legacy.read()).numRows).toBe(1);
  });
});
