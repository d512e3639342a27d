/**
 * Rollbacks while writers commit, as separate OS processes on a local warehouse (issue 30 §1),
 * shared by the small test in the default suite and its stress variant. Two writer processes
 * (fixtures/rollback-writer.ts) commit with random 0–400 ms pauses while this process runs `varve
 * rollback` processes — to random earlier snapshots and to a tag — at random moments. Sized by
 * work: the writers commit at least `commits` times each and on until every rollback has run;
 * each rollback waits for a random number of new acknowledged commits (at least one), spreading
 * the rollbacks over the writers' work. The rollbacks, `verify` and the last
 * read run the CLI in this process (runVarve), which is the writers' other process.
 *
 * What must hold at the end (returned as violations, each naming the seed's run):
 * - every acknowledged commit is in the final table, or lies in the range a rollback's output
 *   named as undone;
 * - the final table equals a replay of the history: each APPEND adds its writer's commit, each
 *   rollback snapshot goes back to its target's state, a COMPACT changes nothing — and each
 *   writer's shared key holds the newest visible commit's value (later writes win over restored rows);
 * - every APPEND snapshot is an acknowledged commit (nothing landed that no writer was told of);
 * - `varve verify` exits 0, the table takes a write afterwards, writers printed no error except
 *   retried conflicts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openCatalog } from '../../lib/catalog/open-catalog.js';
import { tableToRows } from '../../lib/format/columns.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { rollbackTargetOf, type Snapshot } from '../../lib/snapshot/snapshot.js';
import { createTag } from '../../lib/snapshot/tags.js';
import type { Table } from '../../lib/table/table.js';
import { runVarve, until } from '../helpers/cli-process.js';
import { rng, type Rng } from '../helpers/random.js';

const ROOT = join(__dirname, '../..');
const WRITERS = 2;

export interface RollbackRaceSize {
  /** Commits each writer makes at least. */
  commits: number;
  /** Rollbacks run while the writers commit (one of them to a tag). */
  rollbacks: number;
}

interface Ack {
  writer: number;
  i: number;
  snapshot: number;
}

interface WriterProcess {
  child: ChildProcess;
  acks: Ack[];
  err: () => string;
  exited: Promise<number | null>;
}

/** A rollback as its output told it: undone range (undefined: nothing undone or nothing committed). */
interface RollbackRun {
  args: string[];
  out: string;
  snapshot?: number;
  target?: number;
  undone?: { from: number; to: number };
}

export interface RollbackRaceReport {
  commits: number;
  rollbacks: RollbackRun[];
  undoneAcks: number;
  violations: string[];
}

function startWriter(wh: string, writer: number, commits: number, seed: number, stop: string): WriterProcess {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(ROOT, 'test/cli/fixtures/rollback-writer.ts'),
      wh,
      String(writer),
      String(commits),
      String(seed),
      stop,
    ],
    { cwd: ROOT },
  );
  const acks: Ack[] = [];
  let pending = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (t: string) => {
    pending += t;
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) if (line.trim() !== '') acks.push(JSON.parse(line) as Ack);
  });
  child.stderr!.setEncoding('utf8').on('data', (t: string) => (err += t));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, acks, err: () => err, exited };
}

/** Parses `varve rollback` output: the rollback snapshot, its target and what it undid. */
function parseRollback(args: string[], out: string): RollbackRun {
  const m =
    /to snapshot (\d+)(?: \(tag \S+\))? as snapshot (\d+) \(OVERWRITE\): (?:undid snapshots (\d+)\.\.(\d+)|undid snapshot (\d+)|undid no snapshot)/.exec(
      out,
    );
  if (m === null) return { args, out };
  const from = m[3] ?? m[5];
  const to = m[4] ?? m[5];
  return {
    args,
    out,
    target: Number(m[1]),
    snapshot: Number(m[2]),
    ...(from !== undefined ? { undone: { from: Number(from), to: Number(to) } } : {}),
  };
}

async function runRollback(wh: string, table: Table, r: Rng, useTag: boolean): Promise<RollbackRun> {
  let args: string[];
  if (useTag) args = ['rollback', 'db.t', '--to-tag', 'mark'];
  else {
    const latest = (await table.snapshots.latest({ fresh: true }))!.id;
    args = ['rollback', 'db.t', '--to-snapshot', String(r.int(Math.max(1, latest - 8), Math.max(1, latest - 1)))];
  }
  // The CLI in this process (a process of its own, beside the writers', without tsx's start-up
  // time, so that the target is picked close to the latest snapshot while the writers commit).
  const p = await runVarve(wh, args);
  if (p.code !== 0) throw new Error(`varve ${args.join(' ')} exited with ${p.code}:\n${p.err}`);
  return parseRollback(args, p.out);
}

/** Commit keys (`w<writer>-<i>`) visible at each snapshot, replayed from the history. */
function replay(snapshots: Snapshot[], acked: Map<number, Ack>, violations: string[]): Map<number, Set<string>> {
  const state = new Map<number, Set<string>>([[0, new Set()]]);
  for (const s of snapshots) {
    const before = state.get(s.id - 1)!;
    const target = rollbackTargetOf(s);
    if (target !== undefined) state.set(s.id, new Set(state.get(target)));
    else if (s.commitKind === 'APPEND') {
      const ack = acked.get(s.id);
      if (ack === undefined)
        violations.push(
          `APPEND snapshot ${s.id} (${s.commitUser} ${s.commitIdentifier}) was acknowledged to no writer`,
        );
      state.set(s.id, ack === undefined ? before : new Set([...before, `w${ack.writer}-${ack.i}`]));
    } else if (s.commitKind === 'COMPACT') state.set(s.id, before);
    else {
      violations.push(`snapshot ${s.id} is an OVERWRITE that is no rollback`);
      state.set(s.id, before);
    }
  }
  return state;
}

/** The rows the final table must hold, from the visible commits. */
function expectedRows(visible: Set<string>): string[] {
  const rows: string[] = [];
  const newest = new Map<number, number>();
  for (const key of visible) {
    const [, w, i] = /^w(\d+)-(\d+)$/.exec(key)!;
    rows.push(`${key}=${i}`);
    newest.set(Number(w), Math.max(newest.get(Number(w)) ?? -1, Number(i)));
  }
  for (const [w, i] of newest) rows.push(`last-w${w}=${i}`);
  return rows.sort();
}

async function checkFinal(
  wh: string,
  table: Table,
  writers: WriterProcess[],
  runs: RollbackRun[],
  violations: string[],
): Promise<number> {
  const acks = writers.flatMap((w) => w.acks);
  const acked = new Map(acks.map((a) => [a.snapshot, a]));
  if (acked.size !== acks.length) violations.push('two acknowledged commits name the same snapshot');
  const latest = (await table.snapshots.latest({ fresh: true }))!.id;
  const snapshots: Snapshot[] = [];
  for (let id = 1; id <= latest; id++) snapshots.push(await table.snapshots.read(id));
  const state = replay(snapshots, acked, violations);
  for (const run of runs) {
    if (run.snapshot === undefined) continue;
    const s = snapshots[run.snapshot - 1];
    if (rollbackTargetOf(s) !== run.target)
      violations.push(
        `${run.args.join(' ')} printed snapshot ${run.snapshot} going to ${run.target}, which holds ${s.commitKind} ${s.commitIdentifier}`,
      );
    const undone = run.target! + 1 <= run.snapshot - 1 ? { from: run.target! + 1, to: run.snapshot - 1 } : undefined;
    if (JSON.stringify(undone) !== JSON.stringify(run.undone))
      violations.push(
        `${run.args.join(' ')} named ${JSON.stringify(run.undone)} as undone, expected ${JSON.stringify(undone)}`,
      );
  }
  const visible = state.get(latest)!;
  let undoneAcks = 0;
  for (const a of acks) {
    if (visible.has(`w${a.writer}-${a.i}`)) continue;
    undoneAcks++;
    if (!runs.some((run) => run.undone !== undefined && a.snapshot >= run.undone.from && a.snapshot <= run.undone.to)) {
      violations.push(
        `acknowledged commit w${a.writer}-${a.i} (snapshot ${a.snapshot}) is not in the table and no rollback named it as undone`,
      );
    }
  }
  const rows = tableToRows(await table.read(), table.schema.fields)
    .map((row) => `${String(row.id)}=${String(row.n)}`)
    .sort();
  const expected = expectedRows(visible);
  if (JSON.stringify(rows) !== JSON.stringify(expected)) {
    const missing = expected.filter((x) => !rows.includes(x));
    const extra = rows.filter((x) => !expected.includes(x));
    violations.push(
      `the final table (snapshot ${latest}) differs from the replay: missing ${JSON.stringify(missing)}, extra ${JSON.stringify(extra)}`,
    );
  }
  const verify = await runVarve(wh, ['verify', 'db.t']);
  if (verify.code !== 0) violations.push(`varve verify exited ${verify.code}: ${verify.out}${verify.err}`);
  return undoneAcks;
}

/** Runs the race (see the file comment) with `seed`; the violations are empty when every promise held. */
export async function runRollbackRace(seed: number, size: RollbackRaceSize): Promise<RollbackRaceReport> {
  const r = rng(seed);
  const wh = mkdtempSync(join(tmpdir(), 'varve-rollback-race-'));
  const stop = `${wh}.stop`;
  const writers: WriterProcess[] = [];
  try {
    const catalog = openCatalog(wh);
    const table = await catalog.createTable('db.t', {
      fields: parseSchemaText('id STRING NOT NULL, writer INT, n INT'),
      primaryKeys: ['id'],
      partitionKeys: [],
      options: { bucket: '2' },
    });
    for (let w = 0; w < WRITERS; w++) writers.push(startWriter(wh, w, size.commits, seed + 1 + w, stop));
    const acked = () => {
      // A writer that stopped before the rollbacks are done fails the run at once, with what it printed.
      const dead = writers.findIndex((w) => w.child.exitCode !== null);
      if (dead >= 0)
        throw new Error(
          `writer ${dead} exited with ${writers[dead].child.exitCode} during the rollbacks: ${writers[dead].err()}`,
        );
      return writers.reduce((n, w) => n + w.acks.length, 0);
    };
    for (const w of writers) await until(() => w.acks.length > 0, `writer's first commit`, { ...w, out: () => '' });
    await createTag(table.store, table.path, 'mark', (await table.snapshots.latest({ fresh: true }))!.id);
    const tagAt = r.int(1, size.rollbacks - 1);
    const runs: RollbackRun[] = [];
    // Spread over the writers' work: on average (rollbacks + 1) gaps of commits, at least one each.
    const gap = Math.max(1, Math.floor((2 * WRITERS * size.commits) / (size.rollbacks + 1)));
    for (let k = 0; k < size.rollbacks; k++) {
      const seen = acked() + r.int(1, gap);
      await until(() => acked() >= seen, 'commits since the last rollback');
      await new Promise((res) => setTimeout(res, r.int(0, 600)));
      runs.push(await runRollback(wh, table, r, k === tagAt));
    }
    writeFileSync(stop, '');
    const codes = await Promise.all(writers.map((w) => w.exited));
    const commits = writers.reduce((n, w) => n + w.acks.length, 0);
    const violations: string[] = [];
    writers.forEach((w, i) => {
      if (codes[i] !== 0) violations.push(`writer ${i} exited with ${codes[i]}: ${w.err()}`);
      const errors = w
        .err()
        .split('\n')
        .filter((l) => l.trim() !== '' && !l.startsWith('retried conflict: '));
      if (errors.length > 0) violations.push(`writer ${i} printed errors: ${errors.join(' | ')}`);
      if (w.acks.length < size.commits)
        violations.push(`writer ${i} acknowledged ${w.acks.length} commits, fewer than ${size.commits}`);
    });
    for (const run of runs)
      if (run.snapshot === undefined && !/nothing to roll back/.test(run.out))
        violations.push(`unexpected output of varve ${run.args.join(' ')}: ${run.out}`);
    const undoneAcks = await checkFinal(wh, await openCatalog(wh).getTable('db.t'), writers, runs, violations);
    // Writable afterwards.
    const after = await (await openCatalog(wh).getTable('db.t')).write([{ id: 'after', writer: -1, n: 0 }]);
    const read = await runVarve(wh, ['read', 'db.t', '--where', "id = 'after'", '--format', 'jsonl']);
    if (after.snapshot === undefined || !read.out.includes('"after"'))
      violations.push(`the write after the race is not readable: ${read.out}${read.err}`);
    return { commits, rollbacks: runs, undoneAcks, violations };
  } finally {
    for (const w of writers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
    rmSync(wh, { recursive: true, force: true });
    rmSync(stop, { force: true });
  }
}
