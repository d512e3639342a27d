/**
 * Temporary files of a spilling write buffer: sorted runs as Arrow IPC files in a private folder
 * under the OS temp directory. Every folder is registered until cleared, and whatever is left
 * when the process exits is removed then, so a crashed flush does not leak disk.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';

const live = new Set<string>();
let exitHookInstalled = false;

function removeAllOnExit(): void {
  for (const dir of live) rmSync(dir, { recursive: true, force: true });
  live.clear();
}

/** A folder of spilled runs, created on first use. */
export class SpillDirectory {
  private dir: string | null = null;
  private readonly files: string[] = [];
  private bytes = 0;

  constructor(private readonly root: string = tmpdir()) {}

  /** Number of runs on disk. */
  get runCount(): number {
    return this.files.length;
  }

  /** Bytes on disk. */
  get diskBytes(): number {
    return this.bytes;
  }

  /** Writes a table as one Arrow IPC file; returns its run number. */
  write(table: arrow.Table): number {
    const dir = this.folder();
    const path = join(dir, `run-${this.files.length}.arrow`);
    try {
      const bytes = arrow.tableToIPC(table, 'file');
      writeFileSync(path, bytes);
      this.bytes += bytes.byteLength;
    } catch (e) {
      // A half-written run must not be read back or left behind.
      rmSync(path, { force: true });
      throw e;
    }
    this.files.push(path);
    return this.files.length - 1;
  }

  /** Reads run `n` back (one record batch, as written). */
  read(n: number): arrow.Table {
    return arrow.tableFromIPC(readFileSync(this.files[n]));
  }

  /** Deletes every run and the folder. */
  clear(): void {
    if (this.dir !== null) {
      rmSync(this.dir, { recursive: true, force: true });
      live.delete(this.dir);
    }
    this.dir = null;
    this.files.length = 0;
    this.bytes = 0;
  }

  private folder(): string {
    if (this.dir === null) {
      this.dir = mkdtempSync(join(this.root, 'varve-spill-'));
      live.add(this.dir);
      if (!exitHookInstalled) {
        process.once('exit', removeAllOnExit);
        exitHookInstalled = true;
      }
    }
    return this.dir;
  }
}
