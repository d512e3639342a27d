/**
 * Split messages: a split plus what a reader needs to deliver it for one consumer, serialised to
 * the body of one queue message. Large file lists travel by reference: the list is written to an
 * object beside the consumer file and the message names it (discovery deletes it once the split
 * is delivered). Message group = `<table>/<partition>/<bucket>`: one group per bucket keeps every
 * key's changes in order end to end; the deduplication id names consumer, run, snapshot,
 * partition and bucket, so planning a snapshot twice never delivers it twice.
 */
import { createHash } from 'node:crypto';
import * as v from 'valibot';
import { CorruptMetadataError } from '../errors.js';
import { jsonInt, jsonObject, parseJsonMessage, type JsonSchema } from '../json.js';
import { parseDataFileMeta } from '../manifest/metadata-json.js';
import type { DataFileMeta } from '../manifest/types.js';
import { objectLocation, readJsonFile } from '../store/json-file.js';
import { utf8, type ObjectStore } from '../store/object-store.js';
import { splitFileListSchema, splitRefPrefix } from '../snapshot/consumer.js';
import { MAX_QUEUE_ID_LENGTH, type SendRequest } from './split-queue.js';
import type { Split, SplitKind } from './split.js';

/** A split addressed to one consumer's stream. */
export interface SplitMessage extends Split {
  /** `database.table`. */
  table: string;
  /** Folder of the table in the warehouse. */
  tablePath: string;
  consumerId: string;
  /** The consumer's stream run (a reset starts a new run; readers drop messages of other runs). */
  run: string;
  /**
   * The snapshot of the previous split of this bucket that was planned but not known delivered
   * when this one was planned. A reader that has not delivered it refuses this split: it was lost
   * (dead-lettered), and skipping it would break the bucket's order.
   */
  prev?: number;
}

/** Above this many bytes of JSON the file list goes by reference (SQS allows 256 KiB, or 1 MiB since 2025). */
export const MAX_INLINE_MESSAGE_BYTES = 200 * 1024;

interface WireMessage {
  v: 1;
  table: string;
  tablePath: string;
  consumerId: string;
  run: string;
  snapshotId: number;
  partition: string;
  bucket: number;
  totalBuckets: number;
  kind: SplitKind;
  prev?: number;
  schemaId?: number;
  files?: DataFileMeta[];
  beforeFiles?: DataFileMeta[];
  filesRef?: string;
}

/** DataFileMeta objects of a split message, checked by parseDataFileMeta. */
const files = v.array(
  v.pipe(
    jsonObject,
    v.transform((f): DataFileMeta => parseDataFileMeta(f, 'a split message')),
  ),
);

const WireMessageSchema: JsonSchema<WireMessage> = v.looseObject({
  v: v.literal(1),
  table: v.string(),
  tablePath: v.pipe(v.string(), v.nonEmpty()),
  consumerId: v.string(),
  run: v.string(),
  snapshotId: jsonInt,
  partition: v.string(),
  bucket: jsonInt,
  totalBuckets: jsonInt,
  kind: v.picklist(['full', 'delta', 'changelog', 'overwrite']),
  prev: v.optional(jsonInt),
  schemaId: v.optional(jsonInt),
  files: v.optional(files),
  beforeFiles: v.optional(files),
  filesRef: v.optional(v.string()),
});

/** Key of the object holding a split's file list when it is sent by reference. */
function splitRefKey(
  tablePath: string,
  consumerId: string,
  snapshotId: number,
  partition: string,
  bucket: number,
): string {
  return `${splitRefPrefix(tablePath, consumerId, snapshotId)}${partition ? `${partition}/` : ''}bucket-${bucket}.json`;
}

/** The queue send request of a split message; writes the file list by reference when it is large. */
export async function encodeSplitMessage(
  store: ObjectStore,
  m: SplitMessage,
  maxInlineBytes = MAX_INLINE_MESSAGE_BYTES,
): Promise<{ request: SendRequest; byReference: boolean }> {
  const wire: WireMessage = {
    v: 1,
    table: m.table,
    tablePath: m.tablePath,
    consumerId: m.consumerId,
    run: m.run,
    snapshotId: m.snapshotId,
    partition: m.partition,
    bucket: m.bucket,
    totalBuckets: m.totalBuckets,
    kind: m.kind,
    ...(m.prev === undefined ? {} : { prev: m.prev }),
    ...(m.schemaId === undefined ? {} : { schemaId: m.schemaId }),
    files: m.files,
    ...(m.beforeFiles === undefined ? {} : { beforeFiles: m.beforeFiles }),
  };
  let body = JSON.stringify(wire);
  let byReference = false;
  if (utf8(body).byteLength > maxInlineBytes) {
    const key = splitRefKey(m.tablePath, m.consumerId, m.snapshotId, m.partition, m.bucket);
    // Written before the message is sent: a reader never sees a reference to nothing.
    // An overwrite split's two lists go together: { files, beforeFiles }.
    await store.put(
      key,
      utf8(JSON.stringify(m.beforeFiles === undefined ? m.files : { files: m.files, beforeFiles: m.beforeFiles })),
    );
    delete wire.files;
    delete wire.beforeFiles;
    wire.filesRef = key;
    body = JSON.stringify(wire);
    byReference = true;
  }
  return {
    request: {
      groupId: splitGroupId(m.table, m.partition, m.bucket),
      dedupId: splitDedupId(m.consumerId, m.run, m.snapshotId, m.partition, m.bucket),
      body,
    },
    byReference,
  };
}

/** A parsed split message whose file list may still be a reference. */
export type SplitEnvelope = Omit<SplitMessage, 'files'> & { files?: DataFileMeta[]; filesRef?: string };

/** Parses a split message body without fetching a by-reference file list. */
export function parseSplitMessage(body: string): SplitEnvelope {
  const wire = parseJsonMessage(body, WireMessageSchema, 'split message');
  if (wire.files === undefined && !wire.filesRef) {
    throw new CorruptMetadataError(`split message of snapshot ${wire.snapshotId} has neither files nor filesRef`);
  }
  const { v: _version, ...envelope } = wire;
  return envelope;
}

/** The split message with its file list, fetched when it was sent by reference. */
export async function loadSplitMessage(store: ObjectStore, e: SplitEnvelope): Promise<SplitMessage> {
  const { filesRef, files, ...rest } = e;
  if (files !== undefined) return { ...rest, files };
  const listed = (await readJsonFile(store, filesRef!, splitFileListSchema(jsonObject), { what: 'split file list' }))
    .value;
  const what = `split file list ${objectLocation(store, filesRef!)}`;
  const metas = (list: unknown[]) => list.map((f) => parseDataFileMeta(f, what));
  if (Array.isArray(listed)) return { ...rest, files: metas(listed) };
  return {
    ...rest,
    files: metas(listed.files),
    ...(listed.beforeFiles === undefined ? {} : { beforeFiles: metas(listed.beforeFiles) }),
  };
}

/** Parses a split message body, fetching a by-reference file list. */
export async function decodeSplitMessage(store: ObjectStore, body: string): Promise<SplitMessage> {
  return loadSplitMessage(store, parseSplitMessage(body));
}

/** The message group of a bucket: `<table>/<partition>/<bucket>`, hashed when SQS would refuse it. */
export function splitGroupId(table: string, partition: string, bucket: number): string {
  return queueId(`${table}/${partition}/${bucket}`);
}

/**
 * The deduplication id of a split for a consumer: `<consumer>/<run>/<snapshot>/<partition>/<bucket>`.
 * The run's first 8 characters are in it so that a consumer reset re-planning the same snapshot
 * within the deduplication window is not taken for a duplicate of the old run's message.
 */
export function splitDedupId(
  consumerId: string,
  run: string,
  snapshotId: number,
  partition: string,
  bucket: number,
): string {
  return queueId(`${consumerId}/${run.slice(0, 8)}/${snapshotId}/${partition}/${bucket}`);
}

/**
 * `text` when SQS accepts it as a group or deduplication id (1..128 printable ASCII characters),
 * else a readable prefix and a hash of the whole, which is as unique and always the same.
 */
export function queueId(text: string): string {
  if (text.length <= MAX_QUEUE_ID_LENGTH && /^[\x21-\x7e]+$/.test(text)) return text;
  const hash = createHash('sha256').update(text).digest('hex').slice(0, 40);
  const prefix = text.replace(/[^\x21-\x7e]/g, '_').slice(0, MAX_QUEUE_ID_LENGTH - hash.length - 1);
  return `${prefix}#${hash}`;
}
