/**
 * Store URIs as users write them in options and on the command line: what a URI names, and the
 * stores of this machine (a folder, a process's memory store) opened from it. Apart from
 * open-store.ts, which adds S3, so that opening a folder loads no AWS SDK (the CLI's cold start).
 */
import { mkdirSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { InvalidArgumentError } from '../errors.js';
import { LocalStore } from './local-store.js';
import { MemoryStore } from './memory-store.js';

const ACCEPTED =
  'use s3://bucket[/prefix], file:///absolute/folder, a plain folder path (relative to the working directory), ' +
  'or memory://name';

/** What a store URI names: an S3 bucket and prefix, a folder, or a memory store of this process. */
export type StoreLocation =
  | { scheme: 's3'; bucket: string; prefix: string }
  | { scheme: 'folder'; uri: string; path: string }
  | { scheme: 'memory'; name: string };

/** A location this process opens without a network client. */
export type LocalLocation = Exclude<StoreLocation, { scheme: 's3' }>;

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

/**
 * What a URI names: `s3://bucket/prefix`, `file://…` or a plain path (a folder), `memory://name`.
 * Throws `InvalidArgumentError` for anything else.
 */
export function storeLocation(uri: string): StoreLocation {
  if (typeof uri !== 'string' || uri.trim() === '') invalid(String(uri), 'it is empty');
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(uri)?.[1]?.toLowerCase();
  if (scheme === undefined) {
    // `s3:bucket` is a typo, not a folder named "s3:bucket".
    if (/^(s3|file|memory):/i.test(uri)) invalid(uri, 'the scheme must be followed by "//"');
    return { scheme: 'folder', uri, path: uri };
  }
  const rest = uri.slice(scheme.length + 3);
  switch (scheme) {
    case 's3': {
      const slash = rest.indexOf('/');
      const bucket = slash < 0 ? rest : rest.slice(0, slash);
      if (bucket === '') invalid(uri, 'the bucket name is missing');
      return { scheme: 's3', bucket, prefix: slash < 0 ? '' : rest.slice(slash + 1) };
    }
    case 'file':
      return { scheme: 'folder', uri, path: fileUriPath(uri) };
    case 'memory':
      if (rest === '') invalid(uri, 'a memory store needs a name (memory://name)');
      return { scheme: 'memory', name: rest };
    default:
      return invalid(uri, `the scheme ${scheme}:// is not supported`);
  }
}

/**
 * Opens a folder (LocalStore, the folder created when missing) or the process's memory store of
 * that name.
 */
export function openLocalStore(location: LocalLocation): LocalStore | MemoryStore {
  if (location.scheme === 'memory') {
    let store = memoryStores.get(location.name);
    if (!store) memoryStores.set(location.name, (store = new MemoryStore({ uri: `memory://${location.name}` })));
    return store;
  }
  const root = resolve(location.path);
  try {
    mkdirSync(root, { recursive: true });
  } catch (e) {
    invalid(location.uri, `the folder ${root} cannot be created (${(e as Error).message})`);
  }
  if (!statSync(root).isDirectory()) invalid(location.uri, `${root} is a file, not a folder`);
  return new LocalStore(root);
}

/** Forgets every named memory store, so the next `memory://name` starts empty (for test isolation). */
export function forgetMemoryStores(): void {
  memoryStores.clear();
}
