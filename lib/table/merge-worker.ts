/**
 * The merge pool's worker thread (merge-pool.ts): merges whole sections of a read with the same
 * mergeSection the calling thread runs inline, decoding on this thread (its own parquet-wasm
 * instance, no nested pool), reading through the calling thread's store (each range asked for and
 * transferred back; a folder store's files read here, see sectionStore), and hands the merged table back as transferred buffers. Sections are merged
 * one after another in arrival order (one section's working set at a time); a failure is reported
 * per section, never thrown out of the thread.
 */
import { parentPort } from 'node:worker_threads';
import { InvalidArgumentError, VarveError } from '../errors.js';
import { packTable } from '../format/arrow-transfer.js';
import { configureDecodePool } from '../format/decode-pool.js';
import { serializeWorkerError } from '../format/worker-entry.js';
import { LocalStore } from '../store/local-store.js';
import type { ObjectStore, RangeReader } from '../store/object-store.js';
import type { FromMergeWorker, MergeRequest, ToMergeWorker } from './merge-protocol.js';
import { mergeSection } from './read.js';
import { Table } from './table.js';

/** Test hook (as the decode worker's, set before the pool starts): `throw` fails every merge, `exit` ends the thread at the first. */
const FAULT = process.env.VARVE_TEST_DECODE_WORKER_FAULT;

const port = parentPort;
if (port === null) throw new Error('merge-worker.ts runs as a worker thread of the merge pool, not as a script');

// This thread decodes its sections itself.
const configured = configureDecodePool({ threads: 0 });

let chain: Promise<void> = Promise.resolve();
let nextRead = 1;
const reads = new Map<number, { resolve(b: Uint8Array): void; reject(e: unknown): void }>();

port.on('message', (msg: ToMergeWorker) => {
  if (msg.op === 'bytes') {
    const r = reads.get(msg.read);
    if (r === undefined) return;
    reads.delete(msg.read);
    if ('error' in msg)
      r.reject(
        Object.assign(new VarveError(msg.error.message, { kind: 'unavailable', retryable: false }), {
          name: msg.error.name,
        }),
      );
    else r.resolve(msg.bytes);
    return;
  }
  chain = chain.then(() => handle(msg));
});

function send(msg: FromMergeWorker, transfer: ArrayBuffer[] = []): void {
  port!.postMessage(msg, transfer);
}

/** The calling thread's store as this task sees it: range reads only (all a section merge does). */
function remoteStore(id: number): ObjectStore {
  const unsupported = (what: string) => () => {
    throw new InvalidArgumentError(`a merge worker reads data files by range only; it cannot ${what}`);
  };
  const store = {
    getRange(key: string, start: number, end: number): Promise<Uint8Array> {
      const read = nextRead++;
      return new Promise((resolve, reject) => {
        reads.set(read, { resolve, reject });
        send({ op: 'read', id, read, key, start, end });
      });
    },
    get: unsupported('read a whole object'),
    head: unsupported('head an object'),
    put: unsupported('write'),
    putIfAbsent: unsupported('write'),
    putIfMatch: unsupported('write'),
    list: unsupported('list'),
    delete: unsupported('delete'),
  };
  return store as unknown as ObjectStore;
}

/**
 * The store a section reads through: the calling thread's (remoteStore), or, for a table in a
 * folder, that folder opened here, each file once (openRanges). What fails here is asked of the
 * calling thread's store: a missing file then fails the task with that store's own error
 * (ObjectNotFoundError, which read.ts turns into SnapshotExpiredError), a range that failed
 * transiently is read there; a file that failed to open here but opens there fails the task.
 */
function sectionStore(msg: MergeRequest): ObjectStore {
  const remote = remoteStore(msg.id);
  if (msg.folder === undefined) return remote;
  const local = new LocalStore(msg.folder);
  const openHere = async (key: string): Promise<RangeReader> => {
    let reader: RangeReader;
    try {
      reader = await local.openRanges(key);
    } catch (e) {
      // Its own error (the task fails with it), or the bytes of a file this thread could not open.
      await remote.getRange(key, 0, 1);
      throw e;
    }
    let closed = false;
    return {
      size: reader.size,
      // A read after close fails as it does inline (closedReaderError), not from the other thread.
      read: (start, end) =>
        reader.read(start, end).catch((e: unknown) => (closed ? Promise.reject(e) : remote.getRange(key, start, end))),
      close: () => {
        closed = true;
        return reader.close();
      },
    };
  };
  return {
    ...remote,
    openRanges: openHere,
    getRange: (key: string, start: number, end: number) =>
      local.getRange(key, start, end).catch(() => remote.getRange(key, start, end)),
  };
}

async function handle(msg: MergeRequest): Promise<void> {
  try {
    if (FAULT === 'exit') process.exit(70);
    if (FAULT === 'throw') throw new Error('injected decoder fault (VARVE_TEST_DECODE_WORKER_FAULT=throw)');
    await configured;
    const table = new Table(sectionStore(msg), msg.name, msg.path, msg.schema);
    const merged = await mergeSection(table, msg.entries, {
      dropDeletes: msg.dropDeletes,
      dropSequence: msg.dropSequence,
    });
    const { packed, transfer } = packTable(merged);
    send({ op: 'merged', id: msg.id, table: packed }, transfer);
  } catch (e) {
    send({ op: 'failed', id: msg.id, error: serializeWorkerError(e) });
  }
}
