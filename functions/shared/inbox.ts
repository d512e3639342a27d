/**
 * Files dropped for ingestion: under `<warehouse prefix>/inbox/<database>/<table>/` in the
 * warehouse bucket (infra/warehouse.ts `inboxPrefix`), announced by S3 through EventBridge
 * (`Object Created`). The object is read at the etag the event names, so a file overwritten since
 * is left to the event of its new version.
 */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { InvalidArgumentError } from '../../lib/errors.js';
import { parseTableIdentifier } from '../../lib/schema/parse.js';
import { s3ErrorName, s3Status } from '../../lib/store/s3-errors.js';
import { S3Store } from '../../lib/store/s3-store.js';
import type { ObjectStore } from '../../lib/store/object-store.js';

/** The bucket and key prefix a table's inbox files are dropped under. */
export function inboxOf(store: ObjectStore, table: string): { bucket: string; prefix: string } {
  if (!(store instanceof S3Store)) {
    throw new InvalidArgumentError(`inbox files need an S3 warehouse; VARVE_WAREHOUSE is ${store.uri}`);
  }
  const { database, table: name } = parseTableIdentifier(table);
  return { bucket: store.bucket, prefix: `${store.prefix ? `${store.prefix}/` : ''}inbox/${database}/${name}/` };
}

/** What reading an inbox object found. */
export type InboxRead = { body: Uint8Array; key: string } | { missing: 'deleted' | 'superseded' };

/**
 * Reads the object at the event's etag. S3 notifications URL-encode keys; when the key as given
 * does not exist, its decoded form is tried. A 412 means the object was overwritten since the
 * event (its own event follows); a 404 that it was deleted.
 */
export async function readInboxObject(store: S3Store, bucket: string, key: string, etag: string): Promise<InboxRead> {
  const candidates = [key];
  if (/[%+]/.test(key)) {
    try {
      candidates.push(decodeURIComponent(key.replace(/\+/g, ' ')));
    } catch {
      // Not a valid encoding: the key is what it says.
    }
  }
  for (const k of candidates) {
    try {
      const r = await store.client.send(new GetObjectCommand({ Bucket: bucket, Key: k, IfMatch: `"${etag.replace(/"/g, '')}"` }));
      return { body: r.Body ? await r.Body.transformToByteArray() : new Uint8Array(0), key: k };
    } catch (e) {
      if (s3Status(e) === 412 || s3ErrorName(e) === 'PreconditionFailed') return { missing: 'superseded' };
      if (s3Status(e) !== 404) throw e;
    }
  }
  return { missing: 'deleted' };
}
