/** The public API of lib/store: the ObjectStore interface, its three stores, and openStore. */
export { listAll, utf8, fromUtf8 } from './object-store';
export type { ObjectInfo, ObjectStore, StoredObject } from './object-store';
export { checkKeyPrefix, checkObjectKey, compareObjectKeys } from './object-key';
export { LocalStore } from './local-store';
export { S3Store, defaultS3Client } from './s3-store';
export type { S3StoreOptions } from './s3-store';
export { MemoryStore, StoreCrashedError } from './memory-store';
export type { FaultSpec, StoreOp } from './memory-store';
export { openStore, forgetMemoryStores } from './open-store';
