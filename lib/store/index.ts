/** The public API of lib/store: the ObjectStore interface, its three stores, and openStore. */
export { listAll, openUpload, utf8, fromUtf8 } from './object-store.js';
export type { ListOptions, ObjectInfo, ObjectStore, ObjectUpload, StoredObject } from './object-store.js';
export { checkKeyPrefix, checkObjectKey, compareObjectKeys } from './object-key.js';
export { LocalStore } from './local-store.js';
export { S3Store, defaultS3Client } from './s3-store.js';
export type { S3StoreOptions } from './s3-store.js';
export { MemoryStore, StoreCrashedError } from './memory-store.js';
export type { FaultSpec, StoreOp } from './memory-store.js';
export { openStore, forgetMemoryStores } from './open-store.js';
