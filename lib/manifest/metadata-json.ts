/**
 * Strict parsing of metadata JSON (manifests, manifest lists, snapshots, tags): anything that is not
 * the expected shape is a `CorruptMetadataError` naming the file and the field, never a TypeError
 * three calls later.
 */
import { CorruptMetadataError } from '../errors.js';
import { jsonObject, parseJsonFile } from '../json.js';
import { utf8 } from '../store/object-store.js';
import type { DataFileMeta, ManifestEntry } from './types.js';
import type { ValueStats } from '../format/value-stats.js';
import type { JsonValue } from '../schema/value-codec.js';

type Obj = Record<string, unknown>;

/**
 * Parses UTF-8 JSON bytes into an object, or throws CorruptMetadataError naming `what` (e.g.
 * `snapshot file <location>`); the caller checks the fields (faster than a schema on the hot path).
 */
export function parseMetadataObject(bytes: Uint8Array, what: string): Obj {
  return parseJsonFile(bytes, jsonObject, what);
}

/** Throws CorruptMetadataError unless the object's `version` is 1, the one this varve reads. */
export function checkVersion1(o: Obj, what: string): void {
  if (intField(o, 'version', what) !== 1) {
    throw new CorruptMetadataError(
      `${what} has version ${String(o.version)}; this varve reads version 1, upgrade varve`,
    );
  }
}

/** Serialises metadata as UTF-8 JSON. */
export function metadataBytes(value: unknown): Uint8Array {
  return utf8(JSON.stringify(value));
}

function fail(what: string, field: string, expected: string): never {
  throw new CorruptMetadataError(`${what}: field '${field}' is missing or not ${expected}; the file is damaged`);
}

/** The field as a finite integer (corrupt otherwise). */
export function intField(o: Obj, field: string, what: string): number {
  const v = o[field];
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) fail(what, field, 'an integer');
  return v;
}

/** The field as an integer, or undefined when absent. */
export function optionalIntField(o: Obj, field: string, what: string): number | undefined {
  return o[field] === undefined || o[field] === null ? undefined : intField(o, field, what);
}

/** The field as a string (corrupt otherwise). */
export function stringField(o: Obj, field: string, what: string): string {
  const v = o[field];
  if (typeof v !== 'string') fail(what, field, 'a string');
  return v;
}

/** The field as an array (corrupt otherwise). */
export function arrayField(o: Obj, field: string, what: string): unknown[] {
  const v = o[field];
  if (!Array.isArray(v)) fail(what, field, 'an array');
  return v;
}

/** The field as an object (corrupt otherwise). */
export function objectField(o: Obj, field: string, what: string): Obj {
  const v = o[field];
  if (v === null || typeof v !== 'object' || Array.isArray(v)) fail(what, field, 'an object');
  return v as Obj;
}

function keyField(o: Obj, field: string, what: string): JsonValue[] {
  const v = arrayField(o, field, what);
  for (const x of v) {
    if (x !== null && typeof x !== 'string' && typeof x !== 'number' && typeof x !== 'boolean') {
      fail(what, field, 'an array of JSON scalars');
    }
  }
  return v as JsonValue[];
}

/** Validates one DataFileMeta read from JSON. */
export function parseDataFileMeta(v: unknown, what: string): DataFileMeta {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) fail(what, 'file', 'an object');
  const o = v as Obj;
  const fileSource = o.fileSource;
  if (fileSource !== 'APPEND' && fileSource !== 'COMPACT') fail(what, 'fileSource', "'APPEND' or 'COMPACT'");
  return {
    fileName: stringField(o, 'fileName', what),
    fileSize: intField(o, 'fileSize', what),
    rowCount: intField(o, 'rowCount', what),
    minKey: keyField(o, 'minKey', what),
    maxKey: keyField(o, 'maxKey', what),
    sequenceBase: intField(o, 'sequenceBase', what),
    minSequenceNumber: intField(o, 'minSequenceNumber', what),
    maxSequenceNumber: intField(o, 'maxSequenceNumber', what),
    schemaId: intField(o, 'schemaId', what),
    level: intField(o, 'level', what),
    creationTime: intField(o, 'creationTime', what),
    deleteRowCount: intField(o, 'deleteRowCount', what),
    fileSource,
    ...(o.valueStats === undefined ? {} : { valueStats: valueStatsField(o, what) }),
    ...(o.footerCrc32 === undefined ? {} : { footerCrc32: crcField(o, 'footerCrc32', what) }),
    ...(o.fileCrc32 === undefined ? {} : { fileCrc32: crcField(o, 'fileCrc32', what) }),
  };
}

/** An optional checksum field of a DataFileMeta: an unsigned 32-bit integer. */
function crcField(o: Obj, field: string, what: string): number {
  const v = intField(o, field, what);
  if (v < 0 || v > 0xffffffff) fail(what, field, 'an unsigned 32-bit integer');
  return v;
}

/** The optional `valueStats` of a DataFileMeta: field id → { type, min, max, nullCount }. */
function valueStatsField(o: Obj, what: string): ValueStats {
  const out: ValueStats = {};
  for (const [id, v] of Object.entries(objectField(o, 'valueStats', what))) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) fail(what, `valueStats.${id}`, 'an object');
    const c = v as Obj;
    out[id] = {
      type: stringField(c, 'type', what),
      min: (c.min ?? null) as JsonValue,
      max: (c.max ?? null) as JsonValue,
      nullCount: intField(c, 'nullCount', what),
    };
  }
  return out;
}

/** Validates one ManifestEntry read from JSON. */
export function parseManifestEntry(v: unknown, what: string): ManifestEntry {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) fail(what, 'entry', 'an object');
  const o = v as Obj;
  const kind = o.kind;
  if (kind !== 'ADD' && kind !== 'DELETE') fail(what, 'kind', "'ADD' or 'DELETE'");
  return {
    kind,
    partition: stringField(o, 'partition', what),
    bucket: intField(o, 'bucket', what),
    totalBuckets: intField(o, 'totalBuckets', what),
    file: parseDataFileMeta(o.file, what),
  };
}
