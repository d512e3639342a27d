/**
 * Tags: `tag/tag-<name>`, a named, retained copy of a snapshot's JSON plus `tagCreateTime`
 * (Paimon's Tag). A tag keeps its snapshot readable after expiry, because it carries the manifest
 * list names itself; expiry must keep the files a tag references.
 */
import { ObjectNotFoundError, TagError } from '../errors.js';
import { intField, metadataBytes, parseMetadataObject } from '../manifest/metadata-json.js';
import { tagDir, tagKey, displayTableName } from './paths.js';
import type { Snapshot } from './snapshot.js';
import { objectLocation } from '../store/json-file.js';
import { listAll, type ObjectStore } from '../store/object-store.js';
import { SnapshotManager } from './snapshot-manager.js';
import { snapshotFromJson } from './snapshot-file.js';

/** A tag: the tagged snapshot and when the tag was created (epoch ms). */
export type Tag = Snapshot & { tagCreateTime: number };

/** A tag's name and its content. */
export interface NamedTag {
  name: string;
  tag: Tag;
}

/** Throws TagError ('invalid-argument') unless `name` can be a tag name. */
function validateTagName(name: string): void {
  if (
    name === '' ||
    name.trim() !== name ||
    name.includes('/') ||
    name.includes('\\') ||
    name === '.' ||
    name.includes('..')
  ) {
    throw new TagError(
      `invalid tag name ${JSON.stringify(name)}: a tag name is non-empty, has no '/', '\\' or '..' and no surrounding spaces`,
      'invalid-argument',
    );
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the check is for control characters
  if (/[\u0000-\u001f\u007f]/.test(name)) {
    throw new TagError(
      `invalid tag name ${JSON.stringify(name)}: control characters are not allowed`,
      'invalid-argument',
    );
  }
}

/**
 * Tags a snapshot (by id, or one already read) as `name`, created with put-if-absent so two
 * concurrent creators cannot both win; TagError 'already-exists' when the tag exists,
 * SnapshotNotFoundError when the snapshot does not (any more).
 */
export async function createTag(
  store: ObjectStore,
  tablePath: string,
  name: string,
  snapshotOrId: number | Snapshot,
  now: () => number = Date.now,
): Promise<Tag> {
  validateTagName(name);
  const sm = new SnapshotManager(store, tablePath);
  const id = typeof snapshotOrId === 'number' ? snapshotOrId : snapshotOrId.id;
  // A snapshot read earlier may have expired since: a tag must only name files that still exist.
  const snapshot = typeof snapshotOrId === 'number' || !(await sm.exists(id)) ? await sm.read(id) : snapshotOrId;
  const tag: Tag = { ...snapshot, tagCreateTime: now() };
  const created = await store.putIfAbsent(tagKey(tablePath, name), metadataBytes(tag));
  if (created === undefined) {
    throw new TagError(
      `tag '${name}' already exists on table ${displayTableName(tablePath)}; delete it first or pick another name`,
      'already-exists',
    );
  }
  return tag;
}

/** Reads tag `name`; TagError 'not-found' when it does not exist. */
export async function readTag(store: ObjectStore, tablePath: string, name: string): Promise<Tag> {
  validateTagName(name);
  const key = tagKey(tablePath, name);
  let body: Uint8Array;
  try {
    body = (await store.get(key)).body;
  } catch (e) {
    if (e instanceof ObjectNotFoundError) {
      throw new TagError(
        `tag '${name}' does not exist on table ${displayTableName(tablePath)}; list tags to see which do`,
      );
    }
    throw e;
  }
  const what = `tag file ${objectLocation(store, key)}`;
  const o = parseMetadataObject(body, what);
  return { ...snapshotFromJson(o, what), tagCreateTime: intField(o, 'tagCreateTime', what) };
}

/** Deletes tag `name`; TagError 'not-found' when it does not exist. */
export async function deleteTag(store: ObjectStore, tablePath: string, name: string): Promise<void> {
  validateTagName(name);
  const key = tagKey(tablePath, name);
  if ((await store.head(key)) === undefined) {
    throw new TagError(`tag '${name}' does not exist on table ${displayTableName(tablePath)}; nothing to delete`);
  }
  await store.delete(key);
}

/** Every tag of the table, by name. */
export async function listTags(store: ObjectStore, tablePath: string): Promise<NamedTag[]> {
  const prefix = tagDir(tablePath) + 'tag-';
  const names = (await listAll(store, prefix)).map((o) => o.key.slice(prefix.length)).sort();
  const out: NamedTag[] = [];
  for (const name of names) {
    try {
      out.push({ name, tag: await readTag(store, tablePath, name) });
    } catch (e) {
      // Deleted between the listing and the read: it is simply no longer a tag.
      if (!(e instanceof TagError)) throw e;
    }
  }
  return out;
}
