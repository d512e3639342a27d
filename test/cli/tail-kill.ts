/**
 * `varve tail --consumer-id` killed with SIGKILL at random points while a writer (another OS
 * process) commits: each tail is a separate OS process started again after the kill, the killed
 * holder's lease is taken over because its pid is gone. Checks: the union of the outputs covers
 * every committed change; every split (snapshot, bucket) a tail printed it printed whole (so a
 * duplicate is a whole split chunk); per key, the changes come in commit order across all the
 * outputs in sequence (a restart prints again at most the last split of a bucket, right after it).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openCatalog } from '../../lib/catalog/open-catalog.js';
import { bucketOf } from '../../lib/schema/bucket.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { startVarve, varveProcess } from '../helpers/cli-process.js';
import { rng } from '../helpers/random.js';

const ROOT = join(__dirname, '../..');
const BUCKETS = 2;
const KEYS = 10;

/** What a run saw; `violations` must be empty. */
export interface TailKillReport {
  kills: number;
  commits: number;
  /** Lines printed by all tails, duplicates included. */
  lines: number;
  duplicateLines: number;
  violations: string[];
}

interface Line {
  snapshot: number;
  kind: string;
  row: { k: number; v: string };
}

/** Runs the scenario with `kills` SIGKILLs, timing drawn from `seed`. */
export async function runTailKill(seed: number, kills: number): Promise<TailKillReport> {
  const r = rng(seed);
  const wh = mkdtempSync(join(tmpdir(), 'varve-tail-kill-'));
  try {
    const catalog = openCatalog(wh);
    const table = await catalog.createTable('db.t', {
      fields: parseSchemaText('k BIGINT, v STRING'),
      primaryKeys: ['k'],
      partitionKeys: [],
      options: { bucket: String(BUCKETS) },
    });
    const type = table.schema.fields[0].type;
    const stop = join(wh, 'stop-writer');
    const writer = spawn(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'test/cli/commit-writer.ts'), wh, 'db.t', stop, String(KEYS)],
      { cwd: ROOT },
    );
    let writerOut = '';
    writer.stdout.setEncoding('utf8').on('data', (t: string) => (writerOut += t));
    const writerDone = new Promise<number | null>((res) => writer.on('close', res));
    const outputs: string[] = [];
    const violations: string[] = [];
    const args = ['tail', 'db.t', '--consumer-id', 'c1', '--from', 'earliest'];
    for (let n = 0; n < kills; n++) {
      const tail = startVarve(wh, [...args, '--follow']);
      const printed = outputs.join('').length;
      // Killed at a random point once it is delivering (or after a while when there is nothing new).
      for (let i = 0; i < 400 && tail.out().length === 0 && tail.child.exitCode === null; i++) await sleep(25);
      await sleep(r.int(0, 600));
      const exitedEarly = tail.child.exitCode !== null;
      tail.child.kill('SIGKILL');
      await tail.exited;
      outputs.push(tail.out());
      if (exitedEarly) violations.push(`tail ${n} exited by itself before its kill: ${tail.err().slice(0, 400)}`);
      void printed;
    }
    writeFileSync(stop, '');
    await writerDone;
    // The last tail catches up and exits (no --follow): the lease of the last killed one is free.
    const last = varveProcess(wh, args);
    if (last.code !== 0) violations.push(`the final tail failed (${last.code}): ${last.err.slice(0, 400)}`);
    outputs.push(last.out);

    const commits = writerOut
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { i: number; snapshot: number; rows: Array<{ k: number; v: string }> });
    const bucket = (k: number) => bucketOf([type], [BigInt(k)], BUCKETS);
    /** `<snapshot>/<bucket>` → the lines of that split, as `k=v`, sorted. */
    const splits = new Map<string, string[]>();
    const commitOf = new Map<string, number>();
    for (const c of commits) {
      for (const row of c.rows) {
        const id = `${c.snapshot}/${bucket(row.k)}`;
        splits.set(id, [...(splits.get(id) ?? []), `${row.k}=${row.v}`].sort());
        commitOf.set(`${row.k}=${row.v}`, c.i);
      }
    }
    const seen = new Set<string>();
    const lastCommit = new Map<number, number>();
    let lines = 0;
    let duplicateLines = 0;
    outputs.forEach((out, p) => {
      const parsed = out
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Line);
      lines += parsed.length;
      const chunks = new Map<string, string[]>();
      for (const l of parsed) {
        const kv = `${l.row.k}=${l.row.v}`;
        if (l.kind !== '+I') violations.push(`tail ${p}: unexpected kind ${l.kind} for ${kv}`);
        if (seen.has(kv)) duplicateLines++;
        seen.add(kv);
        const id = `${l.snapshot}/${bucket(l.row.k)}`;
        chunks.set(id, [...(chunks.get(id) ?? []), kv]);
        const i = commitOf.get(kv);
        if (i === undefined) violations.push(`tail ${p} printed ${kv}, which no commit wrote`);
        const before = lastCommit.get(l.row.k);
        if (i !== undefined && before !== undefined && i < before)
          violations.push(`tail ${p}: key ${l.row.k} went back from commit ${before} to ${i}`);
        if (i !== undefined) lastCommit.set(l.row.k, Math.max(i, before ?? i));
      }
      for (const [id, got] of chunks) {
        const want = splits.get(id) ?? [];
        if (got.slice().sort().join() !== want.join())
          violations.push(`tail ${p}: split ${id} printed as [${got}], not whole [${want}]`);
      }
    });
    for (const kv of commitOf.keys())
      if (!seen.has(kv)) violations.push(`change ${kv} (commit ${commitOf.get(kv)}) was never printed`);
    return { kills, commits: commits.length, lines, duplicateLines, violations };
  } finally {
    rmSync(wh, { recursive: true, force: true });
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
