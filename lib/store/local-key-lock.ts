/**
 * A per-key lock between processes for the local folder store: a lock file created with
 * `open(…, 'wx')`, which the OS creates for exactly one caller. It serialises the writers of one
 * key (compare-and-swap, put, delete) so that a CAS's compare and its rename are not split by
 * another write.
 */
import { open, stat } from 'node:fs/promises';
import { StoreUnavailableError } from '../errors.js';
import { jitteredBackoff, sleep } from './backoff.js';
import { errnoCode, unlinkIfPresent } from './local-fs.js';

/** A lock held by this process; `release` removes the lock file if it is still ours. */
export interface HeldKeyLock {
  release(): Promise<void>;
}

async function inodeOf(path: string): Promise<bigint | undefined> {
  try {
    return (await stat(path, { bigint: true })).ino;
  } catch (e) {
    if (errnoCode(e) === 'ENOENT') return undefined;
    throw e;
  }
}

async function tryCreate(lockPath: string): Promise<HeldKeyLock | undefined> {
  let fh;
  try {
    fh = await open(lockPath, 'wx');
  } catch (e) {
    if (errnoCode(e) === 'EEXIST') return undefined;
    throw e;
  }
  let ino: bigint;
  try {
    // The owner's pid and time, for whoever finds a stale lock and wonders why.
    await fh.writeFile(`${process.pid} ${new Date().toISOString()}\n`);
    ino = (await fh.stat({ bigint: true })).ino;
  } catch (e) {
    await fh.close();
    await unlinkIfPresent(lockPath);
    throw e;
  }
  await fh.close();
  return {
    async release() {
      // Only remove the file if it is still the one we created: had our lock been broken as stale,
      // the file now at lockPath belongs to another writer.
      if ((await inodeOf(lockPath)) === ino) await unlinkIfPresent(lockPath);
    },
  };
}

/**
 * Removes a lock file older than `staleMs` (its owner died). Two breakers of the same stale lock
 * could in principle remove each other's fresh lock between the second stat and the unlink; the
 * window is microseconds after a 30 s silence, so it is accepted.
 */
async function breakIfStale(lockPath: string, staleMs: number): Promise<void> {
  let st;
  try {
    st = await stat(lockPath, { bigint: true });
  } catch (e) {
    if (errnoCode(e) === 'ENOENT') return;
    throw e;
  }
  if (Date.now() - Number(st.mtimeMs) <= staleMs) return;
  if ((await inodeOf(lockPath)) === st.ino) await unlinkIfPresent(lockPath);
}

/**
 * Takes the lock file at `lockPath`, waiting with jittered backoff while another writer holds it
 * and breaking locks older than `staleMs`. Errors of `open` other than EEXIST (e.g. ENOENT when the
 * folder does not exist) are thrown to the caller, which knows what they mean.
 */
export async function acquireKeyLock(lockPath: string, staleMs: number): Promise<HeldKeyLock> {
  const giveUpAt = Date.now() + 2 * staleMs;
  for (let attempt = 0; ; attempt++) {
    const lock = await tryCreate(lockPath);
    if (lock) return lock;
    await breakIfStale(lockPath, staleMs);
    if (Date.now() > giveUpAt) {
      throw new StoreUnavailableError(
        `could not take lock file ${lockPath} within ${2 * staleMs} ms: other writers of this key kept it busy; ` +
          `retry, or look for a process stuck writing this key`,
      );
    }
    await sleep(jitteredBackoff(Math.min(attempt, 6), 1, 25));
  }
}
