/**
 * The encoder pool's worker thread (lib/format/encoder-pool.ts): its own parquet-wasm instance
 * encodes data files through the same DataFileStreamWriter the calling thread uses inline, fed
 * the same Arrow IPC slices, so a file encoded here has the same bytes. Messages are handled one
 * after another in arrival order; a failure is reported per file, never thrown out of the thread.
 */
import { parentPort } from 'node:worker_threads';
import * as arrow from 'apache-arrow';
import { DataFileStreamWriter } from './data-file-stream.js';
import type { EncoderReply, EncoderRequest, SerializedError } from './encoder-protocol.js';

/** Test hook (set before the pool starts its workers): `throw` fails every add, `exit` ends the thread at the first add. */
const FAULT = process.env.VARVE_TEST_ENCODE_WORKER_FAULT;

const port = parentPort;
if (port === null) throw new Error('encode-worker.ts runs as a worker thread of the encoder pool, not as a script');

const files = new Map<number, DataFileStreamWriter>();
const failed = new Map<number, SerializedError>();
let chain: Promise<void> = Promise.resolve();

port.on('message', (msg: EncoderRequest) => {
  chain = chain.then(() => handle(msg));
});

function reply(msg: EncoderReply, transfer: ArrayBuffer[] = []): void {
  port!.postMessage(msg, transfer);
}

async function handle(msg: EncoderRequest): Promise<void> {
  const file = msg.file;
  try {
    switch (msg.op) {
      case 'open': {
        const schema = arrow.tableFromIPC(msg.schema).schema;
        files.set(file, await DataFileStreamWriter.open(schema, msg.opts));
        return;
      }
      case 'add': {
        if (failed.has(file)) return;
        if (FAULT === 'exit') process.exit(70);
        if (FAULT === 'throw') throw new Error('injected encoder fault (VARVE_TEST_ENCODE_WORKER_FAULT=throw)');
        await writerOf(file).addIPC(msg.ipc, msg.rows);
        reply({ op: 'added', file });
        return;
      }
      case 'finish': {
        const error = failed.get(file);
        if (error) {
          failed.delete(file);
          reply({ op: 'failed', file, error });
          return;
        }
        const bytes = await writerOf(file).finish();
        files.delete(file);
        // The file's bytes move to the calling thread: a fresh buffer of exactly the file, transferred.
        const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
        reply({ op: 'finished', file, bytes: own }, [own.buffer as ArrayBuffer]);
        return;
      }
      case 'discard': {
        failed.delete(file);
        const w = files.get(file);
        files.delete(file);
        await w?.discard();
        reply({ op: 'discarded', file });
        return;
      }
    }
  } catch (e) {
    const error = serialize(e);
    const w = files.get(file);
    files.delete(file);
    await w?.discard().catch(() => undefined);
    failed.set(file, error);
    reply({ op: 'failed', file, error });
  }
}

function writerOf(file: number): DataFileStreamWriter {
  const w = files.get(file);
  if (!w) throw new Error(`encoder worker has no open data file #${file}`);
  return w;
}

function serialize(e: unknown): SerializedError {
  if (e instanceof Error) return { name: e.name, message: e.message, stack: e.stack };
  return { name: 'Error', message: String(e) };
}
