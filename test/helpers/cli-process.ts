/**
 * The `varve` command as separate OS processes (two processes in the real world = two OS
 * processes in the test): run to completion, or started in the background and killed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { expect } from 'vitest';
import { runCli } from '../../lib/cli/main.js';

const ROOT = join(__dirname, '../..');
const BIN = join(ROOT, 'bin/varve.mjs');

/**
 * How long a `varve` child may take before it is killed: a backstop only (a child started from the
 * sources compiles through tsx, a minute or more on a loaded machine); tests wait for what the
 * child does, never for a time.
 */
const CHILD_BACKSTOP_MS = 600_000;

/** Runs `varve --warehouse <warehouse> ...args` in a new process and waits for it. */
export function varveProcess(
  warehouse: string,
  args: string[],
  input?: string,
): { code: number; out: string; err: string } {
  const r = spawnSync(process.execPath, [BIN, '--warehouse', warehouse, ...args], {
    encoding: 'utf8',
    cwd: ROOT,
    input,
    timeout: CHILD_BACKSTOP_MS,
  });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

/** A `varve` process running in the background, its output collected as it comes. */
export interface BackgroundVarve {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

/** Starts `varve --warehouse <warehouse> ...args` without waiting for it. */
export function startVarve(warehouse: string, args: string[]): BackgroundVarve {
  const child = spawn(process.execPath, [BIN, '--warehouse', warehouse, ...args], { cwd: ROOT });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (t: string) => (out += t));
  child.stderr.setEncoding('utf8').on('data', (t: string) => (err += t));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, out: () => out, err: () => err, exited };
}

/**
 * Waits until `check()` is true, polling every 50 ms, for as long as it takes (the test's timeout
 * is the backstop: a child's start may take a minute on a loaded machine). With `running`, fails
 * at once when that process has exited before the condition held, with what it printed.
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  running?: BackgroundVarve,
): Promise<void> {
  for (;;) {
    if (await check()) return;
    if (running && running.child.exitCode !== null) {
      if (await check()) return;
      throw new Error(`the varve process exited with ${running.child.exitCode} before ${what}:\n${running.err()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Runs the CLI in this process against `warehouse`, capturing what it prints (`onErr` sees each
 * stderr text as it comes, e.g. to act once a `tail --follow` says it is following).
 */
export async function runVarve(
  warehouse: string,
  args: string[],
  opts: { onErr?: (text: string) => void } = {},
): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  let err = '';
  const code = await runCli(['--warehouse', warehouse, ...args], {
    out: (t) => out.push(t),
    err: (t) => {
      err += t;
      opts.onErr?.(t);
    },
  });
  return { code, out: out.join(''), err };
}

/** `varve --warehouse <warehouse> ...args` in this process, which must succeed with nothing on stderr: its stdout. */
export async function varveOk(warehouse: string, args: string[]): Promise<string> {
  const r = await runVarve(warehouse, args);
  expect(r, r.err).toMatchObject({ code: 0, err: '' });
  return r.out;
}

/** The rows of a command's `--format jsonl` output, one JSON object a line. */
export function jsonlRows<T = Record<string, unknown>>(out: string): T[] {
  return out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as T);
}
