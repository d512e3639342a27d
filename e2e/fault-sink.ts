/**
 * The e2e consumer's sink: logs every change it is handed as one JSON line (the emulator reads
 * the containers' output as CloudWatch Logs and counts deliveries from it), and fails on cue.
 * A row's `status` names its fault, once per tag, with the attempts counted in a file of the
 * emulation's state folder (VARVE_E2E_STATE_DIR; the only thing here that is not Lambda):
 *
 * - `fail3:<tag>`: the sink throws on the first three attempts, then succeeds;
 * - `slow:<tag>`: the first attempt sleeps past the function's timeout;
 * - `crash:<tag>`: the first attempt kills the runtime after logging the changes before it.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { createStreamHandler } from '../functions/shared/stream-handler.js';

function attempt(tag: string): number {
  const dir = process.env.VARVE_E2E_STATE_DIR;
  if (!dir) return 99;
  const file = path.join(dir, `fault-${tag.replace(/[^A-Za-z0-9_-]/g, '_')}`);
  const n = (existsSync(file) ? Number(readFileSync(file, 'utf8')) : 0) + 1;
  writeFileSync(file, String(n));
  return n;
}

/** Lambda entry of the e2e reader. */
export const handler = createStreamHandler(async (changes) => {
  for (const c of changes) {
    const status = String(c.row.status ?? '');
    const [fault, tag] = status.split(':');
    if (fault === 'fail3' && attempt(status) <= 3)
      throw new Error(`e2e fault: ${status} fails its first three attempts`);
    if (fault === 'slow' && attempt(status) === 1) await new Promise((r) => setTimeout(r, 60_000));
    if (fault === 'crash' && attempt(status) === 1) process.exit(137);
    console.log(
      JSON.stringify({ e2e: 'change', kind: c.kind, id: String(c.row.id), v: String(c.row.v), tag: tag ?? '' }),
    );
  }
});
