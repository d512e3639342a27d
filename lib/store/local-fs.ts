/** Small file-system helpers shared by the local store and its key lock. */
import { unlink } from 'node:fs/promises';

/** The errno code of a Node system error, if any. */
export function errnoCode(e: unknown): string | undefined {
  return typeof e === 'object' && e !== null && 'code' in e ? String((e as { code: unknown }).code) : undefined;
}

/** errno codes that mean "there is no object at this path". */
const NOT_FOUND = new Set(['ENOENT', 'ENOTDIR', 'EISDIR']);

/** True when a file-system error means the path holds no file (missing, or a folder in the way). */
export function isNotFound(e: unknown): boolean {
  return NOT_FOUND.has(errnoCode(e) ?? '');
}

/** Removes a file; one that is already gone is fine. */
export async function unlinkIfPresent(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (e) {
    if (errnoCode(e) !== 'ENOENT') throw e;
  }
}
