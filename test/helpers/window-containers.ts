/**
 * A keyed one-bucket table (`id BIGINT, v STRING`) in memory and a way to open it as a new Lambda
 * container would: its own table object (its own deduplication window and snapshot cache) on the same
 * store, recording the snapshots it GETs. Shared by the deduplication window's tests.
 */
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import type { ObjectStore } from '../../lib/store/object-store.js';
import type { Table } from '../../lib/table/table.js';
import { processView } from './process-view.js';
import { testTable } from './tables.js';

/** A container of its own on the store (its own window), recording the snapshots it GETs. */
export interface Container {
  table: Table;
  snapshotGets: number[];
}

export async function windowTable() {
  const store = new MemoryStore();
  const writer = await testTable({
    schema: 'id BIGINT, v STRING',
    primaryKeys: ['id'],
    options: { bucket: '1' },
    store,
  });
  let containers = 0;
  const open = async (): Promise<Container> => {
    const snapshotGets: number[] = [];
    const view: ObjectStore = {
      ...processView(store),
      uri: `${store.uri}#container-${++containers}`,
      get: (k) => {
        const m = /\/snapshot\/snapshot-(\d+)$/.exec(k);
        if (m) snapshotGets.push(Number(m[1]));
        return store.get(k);
      },
    };
    return { table: await new FolderCatalog(view).getTable('db.t'), snapshotGets };
  };
  return { store, writer, open };
}
