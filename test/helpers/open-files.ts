/**
 * The files this process holds open under a folder, from /proc/self/fd (Linux): what a test
 * compares before and after reads to catch a leaked file handle. Only descriptors pointing under
 * the folder count, so other activity in the process (sockets, the runner's own files) does not.
 */
import { readdirSync, readlinkSync } from 'node:fs';

/** Paths (one per open descriptor, sorted) of the files open under `root`; deleted files end in " (deleted)". */
export function openFilesUnder(root: string): string[] {
  const out: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // closed since the listing (the listing's own descriptor among them)
    }
    if (target.startsWith(`${root}/`)) out.push(target);
  }
  return out.sort();
}
