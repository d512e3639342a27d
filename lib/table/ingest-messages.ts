/**
 * Records that arrive as messages (a queue's messages, each one JSON record or a JSON array of
 * records): validated against the schema as one input, with every invalid record traced back to
 * its message and its position there, so that a reject names where it came from; then landed
 * once per message (ingested-sources.ts), whatever batches the messages are redelivered in.
 */
import { PartiallyLandedError } from '../errors.js';
import { parseJsonText } from '../json.js';
import type { TableSchema } from '../schema/types.js';
import { messagesCommitIdentifier } from './commit-identifiers.js';
import { landedSources, messageSource } from './ingested-sources.js';
import { parseColumnChunks, type RejectedRecord } from './input.js';
import { landRowChunks, type ColumnRowChunk, type Landed, type LandOptions } from './land-rows.js';
import type { Table } from './table.js';

/** One message: `id` is stable across redeliveries (an SQS message id). */
export interface RecordMessage {
  id: string;
  body: string;
}

/** An invalid record, or a message that holds no records at all (line 0). */
export interface MessageReject {
  id: string;
  /** 1-based position of the record in its message; 0 for the whole message. */
  line: number;
  reason: string;
  raw: string;
}

/** The valid rows of the messages and their rejects. */
export interface MessageRecords {
  /** The valid records as Arrow columns (the table's and `_VALUE_KIND`), ready for the writer. */
  chunks: ColumnRowChunk[];
  rejects: MessageReject[];
  /** Ids of the messages that hold at least one valid row. */
  withRows: string[];
}

/** The JSON records of a message body: one record or an array of them. */
function recordsOf(body: string): { records: unknown[] } | { error: string } {
  let value: unknown;
  try {
    value = parseJsonText(body);
  } catch (e) {
    return {
      error: `the message body is not JSON (${(e as Error).message}); send one JSON record or a JSON array of records`,
    };
  }
  return { records: Array.isArray(value) ? value : [value] };
}

/** Parses and validates the records of `messages` against `schema`. */
async function parseMessageRecords(messages: readonly RecordMessage[], schema: TableSchema): Promise<MessageRecords> {
  // One JSONL text for all messages (JSON.stringify never emits a newline): line i belongs to
  // message owner[i - 1], so a rejected line names its message.
  const lines: string[] = [];
  const owner: number[] = [];
  const rejects: MessageReject[] = [];
  messages.forEach((message, m) => {
    const parsed = recordsOf(message.body);
    if ('error' in parsed) {
      rejects.push({ id: message.id, line: 0, reason: parsed.error, raw: message.body });
      return;
    }
    for (const r of parsed.records) {
      lines.push(JSON.stringify(r));
      owner.push(m);
    }
  });
  const firstLine = new Map<number, number>();
  owner.forEach((m, i) => firstLine.has(m) || firstLine.set(m, i));
  const chunks: ColumnRowChunk[] = [];
  const rejected: RejectedRecord[] = [];
  for await (const c of parseColumnChunks(lines.join('\n'), 'jsonl', schema, {
    skipInvalid: true,
    chunkRows: Infinity,
  })) {
    chunks.push({ table: c.table });
    rejected.push(...c.rejected);
  }
  const rowsOf = new Array<number>(messages.length).fill(0);
  owner.forEach((m) => rowsOf[m]++);
  for (const r of rejected) {
    const m = owner[r.line - 1];
    rowsOf[m]--;
    rejects.push({ id: messages[m].id, line: r.line - firstLine.get(m)!, reason: r.reason, raw: r.raw });
  }
  return { chunks, rejects, withRows: messages.filter((_, m) => rowsOf[m] > 0).map((m) => m.id) };
}

/** A message to ingest; `redelivered` when it was received before (its rows may have landed). */
export interface IngestMessage extends RecordMessage {
  redelivered: boolean;
}

/** Where ingested messages' rows and rejects go. */
export interface IngestMessagesOptions {
  /** How the batch with this identifier and these sources lands (commit or enqueue). */
  land: (commitIdentifier: string, sources: string[]) => LandOptions;
  /** Sets rejects aside (a rejects queue); throws when it cannot. */
  reject: (rejects: MessageReject[]) => Promise<void>;
  /** Batches go through the group commit: look for redelivered messages among the queued ones too. */
  queued: boolean;
}

/** What ingesting messages did. */
export interface IngestMessagesResult {
  /** Messages to retry (their rows did not land), with why. */
  failed: string[];
  error?: unknown;
  /** Redelivered messages whose rows had landed already: nothing written for them. */
  duplicates: string[];
  rejected: number;
  landed?: Landed;
}

/** Validates, rejects and lands the records of `messages` (see the file comment). */
export async function ingestMessages(
  table: Table,
  messages: readonly IngestMessage[],
  opts: IngestMessagesOptions,
): Promise<IngestMessagesResult> {
  let fresh = messages;
  let duplicates: string[] = [];
  if (messages.some((m) => m.redelivered)) {
    const landed = await landedSources(
      table,
      messages.map((m) => messageSource(m.id)),
      {
        queued: opts.queued,
        resend: async (m) => opts.land(m.commitIdentifier, m.sources ?? []).enqueue?.(m),
      },
    );
    duplicates = messages.filter((m) => landed.has(messageSource(m.id))).map((m) => m.id);
    fresh = messages.filter((m) => !landed.has(messageSource(m.id)));
  }
  const parsed = await parseMessageRecords(fresh, table.schema);
  const result: IngestMessagesResult = { failed: [], duplicates, rejected: parsed.rejects.length };
  try {
    // Rejects go first: nothing is written yet, so a failure here retries every message cleanly.
    await opts.reject(parsed.rejects);
  } catch (e) {
    return { ...result, failed: fresh.map((m) => m.id), error: e };
  }
  let rows = parsed;
  for (;;) {
    try {
      const land = opts.land(messagesCommitIdentifier('ingest', rows.withRows), rows.withRows.map(messageSource));
      result.landed = await landRowChunks(table, rows.chunks, land);
      return result;
    } catch (e) {
      if (!(e instanceof PartiallyLandedError) || e.landed.size === 0) {
        // Messages that were all rejects are done; the ones with rows come back together.
        return { ...result, failed: rows.withRows, error: e };
      }
      // Direct mode: some of these messages landed meanwhile in another invocation's batch (a
      // message delivered twice at once), and this batch, whose rows are not kept apart by
      // message, committed nothing. The others land again without them: their rows are parsed
      // anew (their rejects went out already), so each message lands once.
      const again = new Set(rows.withRows.filter((id) => !e.landed.has(messageSource(id))));
      result.duplicates = [...result.duplicates, ...rows.withRows.filter((id) => !again.has(id))];
      rows = await parseMessageRecords(
        fresh.filter((m) => again.has(m.id)),
        table.schema,
      );
    }
  }
}
