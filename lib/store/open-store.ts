/** Opening a store from its URI, as users write it in options and on the command line. */
import { mkdirSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { InvalidArgumentError } from '../errors.js';
import { LocalStore } from './local-store.js';
import { MemoryStore } from './memory-store.js';
import type { ObjectStore } from './object-store.js';
import { S3Store } from './s3-store.js';

const ACCEPTED =
  'use s3://bucket[/prefix], file:///absolute/folder, a plain folder path (relative to the working directory), ' +
  'or memory://name';

/** Memory stores by name: opening `memory://x` twice in one process gives the same store. */
const memoryStores = new Map<string, MemoryStore>();

function invalid(uri: string, why: string): never {
  throw new InvalidArgumentError(`invalid store URI ${JSON.stringify(uri)}: ${why}; ${ACCEPTED}`);
}

/** The folder path of a `file://` URI; percent-escapes are decoded only when present. */
function fileUriPath(uri: string): string {
  let rest = uri.slice('file://'.length);
  if (rest.startsWith('localhost/')) rest = rest.slice('localhost'.length);
  if (!rest.startsWith('/')) invalid(uri, 'a file URI needs an absolute path (file:///…)');
  // LocalStore.uri writes '%' as '%25' and nothing else, so a literal path round-trips; URLs made
  // by pathToFileURL (spaces as %20, …) decode here too.
  if (!/%[0-9A-Fa-f]{2}/.test(rest)) return rest;
  try {
    return decodeURIComponent(rest);
  } catch (e) {
    return invalid(uri, `its percent-escapes do not decode (${(e as Error).message})`);
  }
}

function openFolder(uri: string, path: string): LocalStore {
  const root = resolve(path);
  try {
    mkdirSync(root, { recursive: true });
  } catch (e) {
    invalid(uri, `the folder ${root} cannot be created (${(e as Error).message})`);
  }
  if (!statSync(root).isDirectory()) invalid(uri, `${root} is a file, not a folder`);
  return new LocalStore(root);
}

/**
 * Opens the store a URI names: `s3://bucket/prefix` → S3Store, `file://…` or a plain path →
 * LocalStore (the folder is created when missing), `memory://name` → the process's MemoryStore of
 * that name. Throws `InvalidArgumentError` for anything else.
 */
export function openStore(uri: string): ObjectStore {
  if (typeof uri !== 'string' || uri.trim() === '') invalid(String(uri), 'it is empty');
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(uri)?.[1]?.toLowerCase();
  if (scheme === undefined) {
    // `s3:bucket` is a typo, not a folder named "s3:bucket".
    if (/^(s3|file|memory):/i.test(uri)) invalid(uri, 'the scheme must be followed by "//"');
    return openFolder(uri, uri);
  }
  const rest = uri.slice(scheme.length + 3);
  switch (scheme) {
    case 's3': {
      const slash = rest.indexOf('/');
      const bucket = slash < 0 ? rest : rest.slice(0, slash);
      if (bucket === '') invalid(uri, 'the bucket name is missing');
      return new S3Store({ bucket, prefix: slash < 0 ? '' : rest.slice(slash + 1) });
    }
    case 'file':
      return openFolder(uri, fileUriPath(uri));
    case 'memory': {
      if (rest === '') invalid(uri, 'a memory store needs a name (memory://name)');
      let store = memoryStores.get(rest);
      if (!store) memoryStores.set(rest, (store = new MemoryStore({ uri: `memory://${rest}` })));
      return store;
    }
    default:
      return invalid(uri, `the scheme ${scheme}:// is not supported`);
  }
}

/** Forgets every named memory store, so the next `memory://name` starts empty (for test isolation). */
export function forgetMemoryStores(): void {
  memoryStores.clear();
}
