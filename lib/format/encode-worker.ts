/**
 * The encoder pool's worker thread (lib/format/encoder-pool.ts): its own parquet-wasm instance
 * encodes pieces of data files — a row group's slices each — through the same DataFileStreamWriter
 * the calling thread uses inline, fed the same Arrow IPC slices, so a piece's pages are the inline
 * encoder's. Pieces are encoded one after another in arrival order (the wasm working set stays one
 * row group); a failure is reported per piece, never thrown out of the thread.
 */
import { parentPort } from 'node:worker_threads';
import * as arrow from 'apache-arrow';
import { DataFileStreamWriter } from './data-file-stream.js';
import type { EncoderReply, EncoderRequest } from './encoder-protocol.js';
import { fileStatsOf, type FileStats } from './file-stats.js';
import { gatherPiece, gatherSources } from './gather-piece.js';
import { serializeWorkerError } from './worker-entry.js';

/** Test hook (set before the pool starts its workers): `throw` fails every piece, `exit` ends the thread at the first piece. */
const FAULT = process.env.VARVE_TEST_ENCODE_WORKER_FAULT;

const port = parentPort;
if (port === null) throw new Error('encode-worker.ts runs as a worker thread of the encoder pool, not as a script');

let chain: Promise<void> = Promise.resolve();

port.on('message', (msg: EncoderRequest) => {
  chain = chain.then(() => handle(msg));
});

function reply(msg: EncoderReply, transfer: ArrayBuffer[] = []): void {
  port!.postMessage(msg, transfer);
}

async function handle(msg: EncoderRequest): Promise<void> {
  const { piece } = msg;
  let writer: DataFileStreamWriter | undefined;
  try {
    if (FAULT === 'exit') process.exit(70);
    if (FAULT === 'throw') throw new Error('injected encoder fault (VARVE_TEST_ENCODE_WORKER_FAULT=throw)');
    const schema = arrow.tableFromIPC(msg.schema).schema;
    // A piece: the calling thread splices the pieces and seals the file (its chunk checksums).
    writer = await DataFileStreamWriter.open(schema, msg.opts, undefined, false);
    let stats: FileStats | undefined;
    if (msg.op === 'gather') {
      // The rows are gathered here from the shared buffered tables, then fed to the encoder as
      // the inline flush feeds it (one add: the same slices, the same pages).
      const rows = gatherPiece(schema, gatherSources(schema, msg.sources), msg);
      stats = fileStatsOf(msg.keyFields, rows);
      await writer.add(rows);
    } else for (const ipc of msg.slices) await writer.addIPC(ipc, 0);
    const bytes = await writer.finish();
    writer = undefined;
    // The piece's bytes move to the calling thread (a buffer of exactly the piece), and so do the
    // slice buffers, for the pool to fill again.
    const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
    const slices = msg.op === 'piece' ? [...new Set(msg.slices.map((s) => s.buffer as ArrayBuffer))] : [];
    reply({ op: 'encoded', piece, bytes: own, slices, ...(stats ? { stats } : {}) }, [
      own.buffer as ArrayBuffer,
      ...slices,
    ]);
  } catch (e) {
    await writer?.discard().catch(() => undefined);
    reply({ op: 'failed', piece, error: serializeWorkerError(e) });
  }
}
