/**
 * A write job: rows from an input (a file, or a stream such as stdin) parsed chunk by chunk into
 * one commit, planned again under the new schema when an alter lands during the write. This is
 * what `varve write` and `varve delete` run; library users call it the same way.
 *
 * A stream is read once: as it is read it is kept in a spool file, so that a write planned again
 * reads the same bytes. A regular file is simply read again.
 */
import { createReadStream, openAsBlob } from 'node:fs';
import { mkdtemp, open, rm, stat, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { InvalidArgumentError, RecordValidationError } from '../errors.js';
import { followSchemaChanges } from '../retry-budget.js';
import type { TableSchema } from '../schema/types.js';
import { parseColumnChunks, type InputFormat, type RecordInput } from './input.js';
import type { Table } from './table.js';
import type { CommitResult, OverwriteMode } from './writer.js';

/** Where a write job reads its records: a file path, or a stream read once (and spooled). */
export type WriteJobSource = { file: string } | { stream: AsyncIterable<Uint8Array> };

/** Progress of one attempt of a write job (a terminal progress bar, say). */
export interface WriteJobProgress {
  update(records: number, bytesRead: number): void;
  stop(): void;
}

export interface WriteJobOptions {
  format: InputFormat;
  /** Every record is a delete (-D) given by its primary key alone. */
  deletes?: boolean;
  /** Skip invalid records and write them (JSON, one a line, with the reason) to this file; else the first one fails the job. */
  rejectsFile?: string;
  commitUser?: string;
  /** Idempotence key: a job retried with the same identifier commits nothing twice. */
  commitIdentifier?: string;
  /** Replace instead of upsert: the whole table, or the partitions written to. */
  overwrite?: OverwriteMode;
  /** Called at the start of each attempt with the input's size when known (a file). */
  progress?: (inputSize: number | undefined) => WriteJobProgress;
  /** Called when an alter landed during the write, before it is planned again under `to`. */
  onSchemaChange?: (from: TableSchema, to: TableSchema) => void;
}

export interface WriteJobResult {
  /** The commit, or undefined when no valid record was read (nothing was committed). */
  commit?: CommitResult;
  /** Valid records read. */
  records: number;
  /** Invalid records skipped (written to `rejectsFile`). */
  rejected: number;
  /** The table as of the schema the rows were written under. */
  table: Table;
}

/**
 * Parses `source` into one commit of `table` (or none when it holds no valid record). Memory holds
 * a chunk of records and the writer's buffer, not the input.
 */
export async function runWriteJob(
  table: Table,
  source: WriteJobSource,
  opts: WriteJobOptions,
): Promise<WriteJobResult> {
  const rereadable = 'file' in source && (await inputStat(source.file)).isFile();
  const spool = rereadable ? undefined : join(await mkdtemp(join(tmpdir(), 'varve-write-')), 'input');
  try {
    // An alter landed while this write was planned under the old schema (nothing was committed):
    // it is planned again under the new schema, the input checked against it.
    return await followSchemaChanges(
      `writing to ${table.name}`,
      table,
      (current, retries) => {
        const input = retries === 0 || !spool ? source : { file: spool };
        return writeOnce(current, table, input, retries === 0 ? spool : undefined, opts);
      },
      async (current) => {
        const next = await current.latest();
        opts.onSchemaChange?.(current.schema, next.schema);
        return next;
      },
    );
  } finally {
    if (spool) await rm(dirname(spool), { recursive: true, force: true });
  }
}

/** The input file's stat, or a clear error when it is missing or unreadable. */
async function inputStat(file: string): Promise<Awaited<ReturnType<typeof stat>>> {
  try {
    return await stat(file);
  } catch (e) {
    throw new InvalidArgumentError(
      `cannot read the input file ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); give an existing file, or - for stdin`,
    );
  }
}

/** The records of `source`, and the input's size when known. */
async function openSource(source: WriteJobSource, format: InputFormat): Promise<{ input: RecordInput; size?: number }> {
  if ('stream' in source) return { input: source.stream };
  const { size } = await stat(source.file);
  if (format === 'parquet') return { input: await openAsBlob(source.file), size };
  return { input: createReadStream(source.file, { highWaterMark: 1 << 20 }) as AsyncIterable<Uint8Array>, size };
}

/** The chunks of `input`, each also appended to `file` (a spool of a stream, for a write planned again). */
async function* teeTo(input: AsyncIterable<Uint8Array>, file: FileHandle): AsyncIterable<Uint8Array> {
  for await (const chunk of input) {
    await file.write(chunk);
    yield chunk;
  }
}

/** One attempt: parse, validate and write chunk by chunk, then commit. `first` is the table the job started from. */
async function writeOnce(
  table: Table,
  first: Table,
  source: WriteJobSource,
  spoolTo: string | undefined,
  opts: WriteJobOptions,
): Promise<WriteJobResult> {
  const { input: raw, size } = await openSource(source, opts.format);
  const spoolFile = spoolTo ? await open(spoolTo, 'w') : undefined;
  const input = spoolFile ? teeTo(raw as AsyncIterable<Uint8Array>, spoolFile) : raw;
  const rejects = opts.rejectsFile ? await open(opts.rejectsFile, 'w') : undefined;
  const progress = opts.progress?.(size);
  // An overwrite replaces whole partitions: they take the table's bucket count (Paimon's way to rescale).
  const writer = table.newWriter({ commitUser: opts.commitUser, tableBucketCount: opts.overwrite !== undefined });
  let records = 0;
  let rejected = 0;
  try {
    try {
      // Columns, not row objects: each chunk's records are validated straight into Arrow columns.
      for await (const chunk of parseColumnChunks(input, opts.format, table.schema, {
        skipInvalid: rejects !== undefined,
        deletes: opts.deletes,
      })) {
        if (chunk.table.numRows > 0) await writer.writeArrow(chunk.table);
        if (rejects && chunk.rejected.length > 0)
          await rejects.write(chunk.rejected.map((r) => JSON.stringify(r) + '\n').join(''));
        records += chunk.table.numRows;
        rejected += chunk.rejected.length;
        progress?.update(records + rejected, chunk.bytesRead);
      }
    } catch (e) {
      if (e instanceof RecordValidationError && table !== first) {
        throw new RecordValidationError(
          `the schema of ${table.name} changed during the write (now schema ${table.schema.id}) and the input no longer fits it: ${e.message}; nothing was committed`,
          e.line,
          e.field,
        );
      }
      throw e;
    }
    progress?.stop();
    if (records === 0) return { records, rejected, table };
    const commit = await writer.commit(opts.commitIdentifier, opts.overwrite ? { overwrite: opts.overwrite } : {});
    return { commit, records, rejected, table };
  } finally {
    progress?.stop();
    await rejects?.close();
    await spoolFile?.close();
    await writer.close();
  }
}
