/** Opening a store from its URI, as users write it in options and on the command line. */
import type { ObjectStore } from './object-store.js';
import { S3Store } from './s3-store.js';
import { openLocalStore, storeLocation } from './store-uri.js';

export { forgetMemoryStores } from './store-uri.js';

/**
 * Opens the store a URI names: `s3://bucket/prefix` → S3Store, `file://…` or a plain path →
 * LocalStore (the folder is created when missing), `memory://name` → the process's MemoryStore of
 * that name. Throws `InvalidArgumentError` for anything else.
 */
export function openStore(uri: string): ObjectStore {
  const location = storeLocation(uri);
  return location.scheme === 's3'
    ? new S3Store({ bucket: location.bucket, prefix: location.prefix })
    : openLocalStore(location);
}
