/**
 * The decode pool's worker thread (lib/format/decode-pool.ts): its own parquet-wasm instance
 * decodes row groups with the same decodeRowGroupIPC the calling thread runs inline, and hands
 * back the Arrow IPC bytes (transferred, not copied). Requests are decoded one after another in
 * arrival order; a failure is reported per request, never thrown out of the thread.
 */
import { parentPort } from 'node:worker_threads';
import type { DecodeReply, DecodeRequest } from './decode-protocol.js';
import { decodeRowGroupIPC } from './row-group-reader.js';
import { serializeWorkerError } from './worker-entry.js';

/** Test hook (set before the pool starts its workers): `throw` fails every decode, `exit` ends the thread at the first. */
const FAULT = process.env.VARVE_TEST_DECODE_WORKER_FAULT;

const port = parentPort;
if (port === null) throw new Error('decode-worker.ts runs as a worker thread of the decode pool, not as a script');

let chain: Promise<void> = Promise.resolve();

port.on('message', (msg: DecodeRequest) => {
  chain = chain.then(() => handle(msg));
});

function reply(msg: DecodeReply, transfer: ArrayBuffer[] = []): void {
  port!.postMessage(msg, transfer);
}

async function handle(msg: DecodeRequest): Promise<void> {
  try {
    if (FAULT === 'exit') process.exit(70);
    if (FAULT === 'throw') throw new Error('injected decoder fault (VARVE_TEST_DECODE_WORKER_FAULT=throw)');
    const bytes = await decodeRowGroupIPC(msg.blob, msg.columns, msg.rows);
    // The decoded bytes move to the calling thread: a buffer of exactly the stream, transferred.
    const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
    reply({ id: msg.id, ipc: own }, [own.buffer as ArrayBuffer]);
  } catch (e) {
    reply({ id: msg.id, error: serializeWorkerError(e) });
  }
}
