/**
 * The pyiceberg reader of one test file (test/iceberg/outside-readers.ts PyicebergReader): started
 * at its first use, its process closed after the file's tests. Call at the top of the file.
 */
import { afterAll } from 'vitest';
import { PyicebergReader } from '../iceberg/outside-readers.js';

/**
 * Returns the file's reader, or undefined after a loud `SKIPPED <what>` line when pyiceberg cannot
 * run here (under CI=true starting it throws instead).
 */
export function pyicebergSession(what: string): () => PyicebergReader | undefined {
  let reader: PyicebergReader | { unavailable: string } | undefined;
  afterAll(() => {
    if (reader instanceof PyicebergReader) reader.close();
  });
  return () => {
    reader ??= PyicebergReader.start();
    if (reader instanceof PyicebergReader) return reader;
    console.warn(`SKIPPED ${what}: ${reader.unavailable} (under CI=true this fails)`);
    return undefined;
  };
}
