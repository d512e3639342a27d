/**
 * The object store in a local folder (varve's default warehouse). Objects are files; a write goes
 * to a temp file that is fsynced and then linked or renamed into place, so a reader sees either
 * the old object or the whole new one, never a partial file, also across processes.
 */
import { createHash, randomUUID } from 'node:crypto';
import { watch as fsWatch, type FSWatcher } from 'node:fs';
import { link, lstat, mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import {
  InvalidArgumentError,
  InvalidKeyError,
  ObjectNotFoundError,
  StoreRefusedError,
  StoreUnavailableError,
  VarveError,
} from '../errors.js';
import { checkByteRange, clampByteRange } from './byte-range.js';
import { contentEtag, sameEtag } from './etag.js';
import { errnoCode, isNotFound, unlinkIfPresent } from './local-fs.js';
import { acquireKeyLock, type HeldKeyLock } from './local-key-lock.js';
import { checkKeyPrefix, checkObjectKey, compareObjectKeys, isReservedSegment } from './object-key.js';
import {
  closedReaderError,
  type ListOptions,
  type ObjectInfo,
  type ObjectStore,
  type ObjectUpload,
  type RangeReader,
  type StoredObject,
} from './object-store.js';

/** How often a watch whose folder does not exist yet tries again to watch it. */
const WATCH_RETRY_MS = 500;

/** How many file etags `head` remembers, keyed by inode, size and times. */
const ETAG_CACHE_SIZE = 4096;

/** Cuts a file name to at most `maxBytes` of UTF-8 without splitting a character. */
function truncateUtf8(name: string, maxBytes: number): string {
  let out = '';
  let bytes = 0;
  for (const ch of name) {
    bytes += Buffer.byteLength(ch);
    if (bytes > maxBytes) break;
    out += ch;
  }
  return out;
}

/** A plain Uint8Array view of a Buffer, so callers compare bodies without Buffer's subclass. */
function asBytes(buf: Buffer): Uint8Array {
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

/** An object store over the folder `rootDir` (created on the first write when missing). */
export class LocalStore implements ObjectStore {
  /** Absolute path of the root folder. */
  readonly root: string;
  readonly uri: string;
  private readonly staleLockMs: number;
  private readonly etagCache = new Map<string, { stamp: string; etag: string }>();

  constructor(rootDir: string, opts: { staleLockMs?: number } = {}) {
    if (typeof rootDir !== 'string' || rootDir === '') {
      throw new InvalidArgumentError('LocalStore needs a folder path, e.g. new LocalStore("./warehouse")');
    }
    this.root = resolve(rootDir);
    // '%' is escaped so that openStore can tell a literal path from a percent-encoded file URL.
    this.uri = `file://${this.root.replaceAll('%', '%25')}`;
    this.staleLockMs = opts.staleLockMs ?? 30_000;
  }

  async get(key: string): Promise<StoredObject> {
    const path = this.pathOf(key);
    let fh: FileHandle | undefined;
    try {
      fh = await open(path, 'r');
      const st = await fh.stat();
      // Reading through the one open handle keeps bytes and mtime of the same file version.
      const body = await fh.readFile();
      return lazyEtagObject(asBytes(body), st.mtimeMs);
    } catch (e) {
      if (isNotFound(e)) throw new ObjectNotFoundError(key, { cause: e });
      throw this.fsError(e, 'get', key);
    } finally {
      await fh?.close();
    }
  }

  async getRange(key: string, start: number, end: number): Promise<Uint8Array> {
    checkByteRange(key, start, end);
    const reader = await this.openRanges(key);
    try {
      return await reader.read(start, end);
    } finally {
      await reader.close();
    }
  }

  /**
   * The file opened once for many ranged reads (one open and one fstat, then a pread per range).
   * Reads go to the file that was opened: a put over the key renames a new file into place and
   * leaves this one (its inode) readable until closed, so a reader sees one version whole.
   */
  async openRanges(key: string): Promise<RangeReader> {
    const path = this.pathOf(key);
    let fh: FileHandle | undefined;
    let size: number;
    try {
      fh = await open(path, 'r');
      const st = await fh.stat();
      if (st.isDirectory()) throw new ObjectNotFoundError(key);
      size = st.size;
    } catch (e) {
      await fh?.close().catch(() => undefined);
      if (e instanceof ObjectNotFoundError) throw e;
      if (isNotFound(e)) throw new ObjectNotFoundError(key, { cause: e });
      throw this.fsError(e, 'getRange', key);
    }
    const file = fh;
    let closing: Promise<void> | undefined;
    return {
      size,
      read: async (start, end) => {
        checkByteRange(key, start, end);
        if (closing !== undefined) throw closedReaderError(key);
        try {
          return await readFileRange(file, start, end, size);
        } catch (e) {
          throw this.fsError(e, 'getRange', key);
        }
      },
      // A read-only descriptor loses nothing when its close fails: the error is dropped.
      close: () => (closing ??= file.close().catch(() => undefined)),
    };
  }

  async head(key: string): Promise<(ObjectInfo & { etag: string }) | undefined> {
    const path = this.pathOf(key);
    try {
      return await this.describe(key, path);
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw this.fsError(e, 'head', key);
    }
  }

  async put(key: string, body: Uint8Array): Promise<{ etag: string }> {
    const path = this.pathOf(key);
    await this.ensureFolder(dirname(path), key);
    const tmp = await this.writeTemp(path, body).catch((e) => Promise.reject(this.fsError(e, 'put', key)));
    await this.publishTemp(tmp, path, key);
    return { etag: contentEtag(body) };
  }

  /**
   * Renames a written temp file to its key's path under the key lock, so that a concurrent
   * compare-and-swap cannot land between its compare and its rename; a failure removes the temp file.
   */
  private async publishTemp(tmp: string, path: string, key: string): Promise<void> {
    try {
      const lock = await this.lock(path, key);
      try {
        await rename(tmp, path);
      } finally {
        await lock.release();
      }
    } catch (e) {
      await unlinkIfPresent(tmp);
      throw this.fsError(e, 'put', key);
    }
  }

  async putIfAbsent(key: string, body: Uint8Array): Promise<{ etag: string } | undefined> {
    const path = this.pathOf(key);
    await this.ensureFolder(dirname(path), key);
    const tmp = await this.writeTemp(path, body).catch((e) => Promise.reject(this.fsError(e, 'putIfAbsent', key)));
    try {
      // link() creates the name only if it does not exist, atomically: this is the create-only commit.
      await link(tmp, path);
      return { etag: contentEtag(body) };
    } catch (e) {
      if (errnoCode(e) !== 'EEXIST') throw this.fsError(e, 'putIfAbsent', key);
      if (await this.isFolder(path)) throw this.folderClash(key);
      return undefined;
    } finally {
      await unlinkIfPresent(tmp);
    }
  }

  async putIfMatch(key: string, body: Uint8Array, etag: string): Promise<{ etag: string } | undefined> {
    const path = this.pathOf(key);
    let tmp: string;
    try {
      // Written before the lock is taken, to keep the critical section to compare + rename.
      tmp = await this.writeTemp(path, body);
    } catch (e) {
      if (isNotFound(e)) throw new ObjectNotFoundError(key, { cause: e }); // not even its folder exists
      throw this.fsError(e, 'putIfMatch', key);
    }
    let renamed = false;
    try {
      const lock = await this.lock(path, key);
      try {
        const current = await this.describe(key, path);
        if (!sameEtag(current.etag, etag)) return undefined;
        await rename(tmp, path);
        renamed = true;
        return { etag: contentEtag(body) };
      } finally {
        await lock.release();
      }
    } catch (e) {
      if (isNotFound(e)) throw new ObjectNotFoundError(key, { cause: e });
      throw this.fsError(e, 'putIfMatch', key);
    } finally {
      if (!renamed) await unlinkIfPresent(tmp);
    }
  }

  /**
   * Writes the object into a temp file beside it as the parts come, then fsyncs and renames it
   * into place on `complete` (as `put` does), so no reader sees a partial file.
   */
  upload(key: string): ObjectUpload {
    const path = this.pathOf(key);
    const hash = createHash('sha256');
    let size = 0;
    let state: 'open' | 'done' = 'open';
    let opened: Promise<{ tmp: string; fh: FileHandle }> | undefined;
    const open_ = () =>
      (opened ??= (async () => {
        await this.ensureFolder(dirname(path), key);
        const tmp = this.tempPath(path);
        try {
          return { tmp, fh: await open(tmp, 'wx') };
        } catch (e) {
          throw this.fsError(e, 'put', key);
        }
      })());
    const drop = async () => {
      state = 'done';
      if (opened === undefined) return;
      const { tmp, fh } = await opened.catch(() => ({ tmp: undefined, fh: undefined }));
      await fh?.close().catch(() => undefined);
      if (tmp !== undefined) await unlinkIfPresent(tmp);
    };
    const checkOpen = () => {
      if (state !== 'open') throw new InvalidArgumentError(`the upload of ${key} is finished; start a new one`);
    };
    return {
      write: async (bytes) => {
        checkOpen();
        const { fh } = await open_();
        try {
          for (let done = 0; done < bytes.byteLength; )
            done += (await fh.write(bytes, done, bytes.byteLength - done)).bytesWritten;
        } catch (e) {
          await drop();
          throw this.fsError(e, 'put', key);
        }
        hash.update(bytes);
        size += bytes.byteLength;
      },
      complete: async () => {
        checkOpen();
        const { tmp, fh } = await open_();
        state = 'done';
        try {
          await fh.sync(); // the bytes are on disk before the name that publishes them exists
          await fh.close();
        } catch (e) {
          await fh.close().catch(() => undefined);
          await unlinkIfPresent(tmp);
          throw this.fsError(e, 'put', key);
        }
        await this.publishTemp(tmp, path, key);
        return { etag: `"${hash.digest('hex')}"`, size };
      },
      abort: async () => {
        if (state === 'open') await drop();
      },
    };
  }

  async *list(prefix: string, opts: ListOptions = {}): AsyncIterable<ObjectInfo> {
    checkKeyPrefix(prefix);
    const slash = prefix.lastIndexOf('/');
    const after = opts.startAfter;
    for await (const o of this.walk(slash < 0 ? '' : prefix.slice(0, slash), prefix)) {
      if (after === undefined || compareObjectKeys(o.key, after) > 0) yield o;
    }
  }

  async delete(key: string): Promise<void> {
    const path = this.pathOf(key);
    let lock: HeldKeyLock;
    try {
      lock = await this.lock(path, key);
    } catch (e) {
      if (isNotFound(e)) return; // no folder, so no object
      throw this.fsError(e, 'delete', key);
    }
    try {
      await unlink(path);
    } catch (e) {
      // A folder (EISDIR on Linux, EPERM on macOS) holds other keys and is no object: nothing to delete.
      const folder = isNotFound(e) || (errnoCode(e) === 'EPERM' && (await this.isFolder(path)));
      if (!folder) throw this.fsError(e, 'delete', key);
    } finally {
      await lock.release();
    }
  }

  async deleteIfMatch(key: string, etag: string): Promise<boolean> {
    const path = this.pathOf(key);
    let lock: HeldKeyLock;
    try {
      lock = await this.lock(path, key);
    } catch (e) {
      if (isNotFound(e)) return false; // no folder, so no object
      throw this.fsError(e, 'deleteIfMatch', key);
    }
    try {
      // Under the key's lock, as putIfMatch: a write of the key cannot come between compare and unlink.
      const current = await this.describe(key, path);
      if (!sameEtag(current.etag, etag)) return false;
      await unlink(path);
      return true;
    } catch (e) {
      if (isNotFound(e) || errnoCode(e) === 'EISDIR') return false;
      throw this.fsError(e, 'deleteIfMatch', key);
    } finally {
      await lock.release();
    }
  }

  /** Yields the objects under folder `dirKey` whose keys start with `prefix`, in key order. */
  private async *walk(dirKey: string, prefix: string): AsyncGenerator<ObjectInfo> {
    const dirPath = dirKey === '' ? this.root : join(this.root, ...dirKey.split('/'));
    let entries;
    try {
      entries = await readdir(dirPath, { withFileTypes: true });
    } catch (e) {
      if (isNotFound(e)) return;
      throw this.fsError(e, 'list', prefix);
    }
    // A folder sorts as "name/": then walking folders depth-first yields keys in global key order.
    const sorted = entries
      .filter((d) => !isReservedSegment(d.name))
      .map((d) => ({ d, sortName: d.isDirectory() ? `${d.name}/` : d.name }))
      .sort((a, b) => compareObjectKeys(a.sortName, b.sortName));
    for (const { d, sortName } of sorted) {
      const key = dirKey === '' ? d.name : `${dirKey}/${d.name}`;
      if (d.isDirectory()) {
        const asPrefix = dirKey === '' ? sortName : `${dirKey}/${sortName}`;
        if (asPrefix.startsWith(prefix) || prefix.startsWith(asPrefix)) yield* this.walk(key, prefix);
        continue;
      }
      if (!key.startsWith(prefix)) continue;
      let st;
      try {
        st = await stat(join(dirPath, d.name));
      } catch (e) {
        if (isNotFound(e)) continue; // deleted since readdir
        throw this.fsError(e, 'list', prefix);
      }
      if (st.isFile()) yield { key, size: st.size, lastModified: st.mtimeMs };
    }
  }

  /** Size, mtime and etag of the file at `path`; the etag is cached per file version. */
  private async describe(key: string, path: string): Promise<ObjectInfo & { etag: string }> {
    const fh = await open(path, 'r');
    try {
      const st = await fh.stat({ bigint: true });
      if (st.isDirectory()) throw Object.assign(new Error(`${path} is a folder`), { code: 'EISDIR' });
      // Every write renames a fresh inode into place, so inode + size + times identify a version.
      const stamp = `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
      const cached = this.etagCache.get(path);
      let etag = cached?.stamp === stamp ? cached.etag : undefined;
      if (etag === undefined) {
        etag = contentEtag(await fh.readFile());
        this.etagCache.delete(path);
        this.etagCache.set(path, { stamp, etag });
        if (this.etagCache.size > ETAG_CACHE_SIZE) this.etagCache.delete(this.etagCache.keys().next().value!);
      }
      return { key, size: Number(st.size), lastModified: Number(st.mtimeMs), etag };
    } finally {
      await fh.close();
    }
  }

  /**
   * Watches the folder of `prefix` with fs.watch (inotify on Linux: no polling), ignoring temp
   * files. A folder that does not exist yet (a table before its first commit) is watched once it
   * appears; a watch that fails is dropped — callers poll as a backstop either way.
   */
  watch(prefix: string, onChange: () => void): () => void {
    checkKeyPrefix(prefix);
    const dir = prefix === '' ? this.root : join(this.root, ...prefix.replace(/\/$/, '').split('/'));
    let watcher: FSWatcher | undefined;
    let retry: NodeJS.Timeout | undefined;
    let closed = false;
    const start = (): void => {
      if (closed) return;
      try {
        watcher = fsWatch(dir, { persistent: false }, (_event, name) => {
          // Temp files ('.…tmp') come and go before every write: only real objects matter.
          if (typeof name === 'string' && name.startsWith('.')) return;
          onChange();
        });
        watcher.on('error', () => {
          watcher?.close();
          watcher = undefined;
        });
        if (retry !== undefined) {
          clearInterval(retry);
          retry = undefined;
          onChange(); // objects may have appeared before the watch began
        }
      } catch {
        retry ??= setInterval(start, WATCH_RETRY_MS).unref();
      }
    };
    start();
    return () => {
      closed = true;
      if (retry !== undefined) clearInterval(retry);
      watcher?.close();
    };
  }

  private pathOf(key: string): string {
    checkObjectKey(key);
    return join(this.root, ...key.split('/'));
  }

  /** Writes `body` to a fresh, fsynced temp file beside `path` and returns the temp's path; raw fs errors. */
  private async writeTemp(path: string, body: Uint8Array): Promise<string> {
    const tmp = this.tempPath(path);
    const fh = await open(tmp, 'wx');
    try {
      await fh.writeFile(body);
      await fh.sync(); // the bytes are on disk before the name that publishes them exists
    } catch (e) {
      await fh.close();
      await unlinkIfPresent(tmp);
      throw e;
    }
    await fh.close();
    return tmp;
  }

  /** A fresh temp file name beside `path`. */
  private tempPath(path: string): string {
    const name = path.slice(dirname(path).length + 1);
    // Starts with '.' and ends with '.tmp': list() skips it, and the name stays under 255 bytes.
    return join(dirname(path), `.${truncateUtf8(name, 100)}.${randomUUID()}.tmp`);
  }

  private lock(path: string, key: string): Promise<HeldKeyLock> {
    const name = path.slice(dirname(path).length + 1);
    // One lock file per key; names too long for `.<name>.lock` use a digest instead.
    const lockName =
      Buffer.byteLength(name) <= 240 ? name : createHash('sha256').update(key).digest('hex').slice(0, 40);
    return acquireKeyLock(join(dirname(path), `.${lockName}.lock`), this.staleLockMs);
  }

  private async isFolder(path: string): Promise<boolean> {
    try {
      return (await lstat(path)).isDirectory();
    } catch (e) {
      if (isNotFound(e)) return false; // deleted since: the key did exist when our link failed
      throw e;
    }
  }

  private async ensureFolder(dir: string, key: string): Promise<void> {
    try {
      await mkdir(dir, { recursive: true });
    } catch (e) {
      if (errnoCode(e) === 'ENOTDIR' || errnoCode(e) === 'EEXIST') throw this.folderClash(key);
      throw this.fsError(e, 'mkdir', key);
    }
  }

  private folderClash(key: string): InvalidKeyError {
    return new InvalidKeyError(
      `cannot store ${key} in the folder store ${this.root}: a key there cannot be both an object and a folder ` +
        `of other keys (like "a" and "a/b"); rename one of them`,
    );
  }

  /** Wraps a file-system error of `op` on `key` in the store's taxonomy. */
  private fsError(e: unknown, op: string, key: string): Error {
    if (e instanceof VarveError) return e;
    const code = errnoCode(e);
    if (code === 'ENAMETOOLONG') {
      return new InvalidKeyError(`key ${key} is too long for a local folder (255 bytes per segment); shorten it`);
    }
    if (code === 'EISDIR') return this.folderClash(key);
    return folderStoreError(e, this.root, op, key, this.pathOf(key));
  }
}

/** errno codes of writes no retry heals, with what they mean and what to do. */
const REFUSED: Record<string, { what: string; advice: string }> = {
  ENOSPC: { what: 'no space left on the device', advice: 'free space on the disk holding the warehouse, then retry' },
  EDQUOT: { what: 'the disk quota is used up', advice: 'free space or raise the quota, then retry' },
  EFBIG: {
    what: 'the file is too large for the file system',
    advice: 'lower target-file-size or use another file system',
  },
  EROFS: {
    what: 'the file system is read-only',
    advice: 'remount it read-write or point --warehouse at a writable folder',
  },
  EACCES: { what: 'permission denied', advice: 'give this user read and write access to the warehouse folder' },
  EPERM: { what: 'operation not permitted', advice: 'give this user read and write access to the warehouse folder' },
};

/**
 * The store error of a file-system error `e` of `op` on `key` (at `path` in the folder store at
 * `root`): StoreRefusedError for what no retry heals (see REFUSED), else StoreUnavailableError.
 */
export function folderStoreError(e: unknown, root: string, op: string, key: string, path: string): VarveError {
  const code = errnoCode(e);
  const refused = code === undefined ? undefined : REFUSED[code];
  if (refused !== undefined) {
    // No retry heals these: failing at once keeps a commit from retrying for minutes and then
    // blaming a busy table (nothing is committed: the snapshot is created last).
    return new StoreRefusedError(
      `folder store ${root}: ${op} ${key} failed: ${refused.what} (${code}) at ${path}; ${refused.advice}`,
      code!,
      path,
      { cause: e },
    );
  }
  return new StoreUnavailableError(
    `folder store ${root}: ${op} ${key} failed (${code ?? 'unknown error'}); check that the folder exists, is writable and the disk is not full`,
    { cause: e },
  );
}

/** Bytes [start, end) of the open file of `size` bytes, clamped to it (shorter if the file is); raw fs errors. */
async function readFileRange(fh: FileHandle, start: number, end: number, size: number): Promise<Uint8Array> {
  const [from, to] = clampByteRange(start, end, size);
  // Not zero-filled (the read overwrites it; a short read returns a copy of what was read) and not from
  // Buffer's shared pool: a region of exactly the range, which a merge worker can be handed.
  const out = asBytes(Buffer.allocUnsafeSlow(to - from));
  for (let done = 0; done < out.length; ) {
    const { bytesRead } = await fh.read(out, done, out.length - done, from + done);
    // Objects are replaced by rename, never truncated in place; a copy keeps the unread rest unreachable.
    if (bytesRead === 0) return out.slice(0, done);
    done += bytesRead;
  }
  return out;
}

/**
 * A read object whose etag (a SHA-256 of the body) is computed on first use: reads of data files
 * never ask for it, and hashing every byte read cost about a tenth of a merged read.
 */
function lazyEtagObject(body: Uint8Array, lastModified: number): StoredObject {
  let etag: string | undefined;
  return {
    body,
    lastModified,
    get etag(): string {
      return (etag ??= contentEtag(body));
    },
  };
}
