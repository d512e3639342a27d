/**
 * The JSON of `snapshot/snapshot-<id>` (and of tags, which embed it): strict parsing, so a damaged
 * file is a CorruptMetadataError naming the key rather than a wrong answer.
 */
import { CorruptMetadataError } from '../errors.js';
import {
  checkVersion1,
  intField,
  metadataBytes,
  objectField,
  optionalIntField,
  parseMetadataObject,
  stringField,
} from '../manifest/metadata-json.js';
import type { CommitKind, Snapshot } from './snapshot.js';

const KINDS: readonly CommitKind[] = ['APPEND', 'COMPACT', 'OVERWRITE'];

/** Validates a parsed snapshot object; `what` names the file in errors. */
export function snapshotFromJson(o: Record<string, unknown>, what: string): Snapshot {
  checkVersion1(o, what);
  const commitKind = o.commitKind as CommitKind;
  if (!KINDS.includes(commitKind)) {
    throw new CorruptMetadataError(
      `${what}: commitKind ${JSON.stringify(o.commitKind)} is not one of ${KINDS.join(', ')}`,
    );
  }
  const s: Snapshot = {
    version: 1,
    id: intField(o, 'id', what),
    schemaId: intField(o, 'schemaId', what),
    baseManifestList: stringField(o, 'baseManifestList', what),
    deltaManifestList: stringField(o, 'deltaManifestList', what),
    commitUser: stringField(o, 'commitUser', what),
    commitIdentifier: stringField(o, 'commitIdentifier', what),
    commitKind,
    timeMillis: intField(o, 'timeMillis', what),
    totalRecordCount: intField(o, 'totalRecordCount', what),
    deltaRecordCount: intField(o, 'deltaRecordCount', what),
    nextSequenceNumber: intField(o, 'nextSequenceNumber', what),
  };
  if (o.changelogManifestList !== undefined) s.changelogManifestList = stringField(o, 'changelogManifestList', what);
  const changelogRecordCount = optionalIntField(o, 'changelogRecordCount', what);
  if (changelogRecordCount !== undefined) s.changelogRecordCount = changelogRecordCount;
  const watermark = optionalIntField(o, 'watermark', what);
  if (watermark !== undefined) s.watermark = watermark;
  if (o.deletionVectors !== undefined) s.deletionVectors = stringField(o, 'deletionVectors', what);
  if (o.properties !== undefined) {
    const props = objectField(o, 'properties', what);
    for (const [k, v] of Object.entries(props)) {
      if (typeof v !== 'string') throw new CorruptMetadataError(`${what}: property '${k}' is not a string`);
    }
    s.properties = props as Record<string, string>;
  }
  return s;
}

/** Parses snapshot file bytes; CorruptMetadataError when they are not a snapshot with id `expectedId`. */
export function parseSnapshot(bytes: Uint8Array, what: string, expectedId?: number): Snapshot {
  const s = snapshotFromJson(parseMetadataObject(bytes, what), what);
  if (expectedId !== undefined && s.id !== expectedId) {
    throw new CorruptMetadataError(`${what} holds snapshot id ${s.id}, expected ${expectedId}; the file was misplaced`);
  }
  return s;
}

/** The bytes of a snapshot file. */
export function snapshotBytes(s: Snapshot): Uint8Array {
  return metadataBytes(s);
}
