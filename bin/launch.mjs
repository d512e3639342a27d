// The launcher's relaunch (bin/varve.mjs): `varve write` and `varve delete` read a whole input
// file into a write buffer, `varve count` streams a whole table through decoded batches, and two
// memory settings that a running node process cannot change for itself cut their peak resident
// memory (measured on the 2,000,000-row JSONL write with a 32 MB buffer and the count of a
// 10,000,000-row table, docs/BENCHMARKS.md §11), and write and delete get a third:
//   --max-semi-space-size=2   V8's young generation grows to 3 × 16 MB by default while the
//                             input is parsed (a short-lived string and object per record) or a
//                             table is scanned (a dropped batch is freed only by a GC); 2 MB
//                             semi-spaces keep it at 6 MB, at no measured CPU cost.
//   --heap-growing-percent=100 (write and delete) after each full collection V8 lets the heap
//                             (Arrow's ArrayBuffers included) grow by a factor it picks from its
//                             GC speed, up to 4 × while the heap is small; the buffer's spilled
//                             tables and the parse chunks, promoted before they die, then pile up
//                             as garbage (57–78 MB of array buffers at the peak with a 32 MB
//                             buffer). A fixed 2 × keeps about as many full collections (≈ 112
//                             against 98 on the 2M-row write, ≈ 0.5 s more GC pause of ≈ 16 s
//                             CPU) and a peak ≈ 27 MB lower. V8 would take this one at run time
//                             too, but a library setting it would change the heap of every
//                             program that imports varve: it stays the child's.
//   MALLOC_ARENA_MAX=2        glibc gives every thread that mallocs (V8's compiler and GC
//                             helpers, libuv's pool) its own arena, and memory freed in one stays
//                             resident; two arenas keep that fragmentation down. Ignored off glibc.
// `v8.setFlagsFromString` after start does not resize the heap, and a `#!/usr/bin/env -S node ...`
// shebang fails on BusyBox env (Alpine images) and is skipped by `node bin/varve.mjs`, so the
// launcher starts the command in a child process. The parent costs ≈ 8 MB of private memory and
// ≈ 40 ms of start-up; it only waits: stdin, stdout and stderr are the child's own (inherited),
// its exit code becomes the parent's, a signal the parent receives is passed on, a child killed
// by a signal kills the parent with the same signal, and a parent killed outright (SIGKILL)
// takes the child with it. Every other command runs in-process.
import { spawn } from 'node:child_process';

/**
 * The commands relaunched: the ones that read a whole input into the write buffer, and `count`,
 * a scan of the whole table whose dropped batches 2 MB semi-spaces collect sooner. `read` stays
 * in-process: the same settings cut its peak too, but cost its printing CPU (docs/BENCHMARKS.md §11).
 */
const BULK_COMMANDS = new Set(['write', 'delete', 'count']);

/** Set in the child's environment to the launcher's pid: it is the relaunched process (never relaunch twice). */
export const LAUNCHED_ENV = 'VARVE_LAUNCHED';

/** The node flags of the relaunched child. */
export const CHILD_NODE_FLAGS = ['--max-semi-space-size=2'];

/** The node flags a relaunched `write` or `delete` adds (measured on the write only). */
export const WRITE_NODE_FLAGS = ['--heap-growing-percent=100'];

/** The command name in the CLI arguments: the first positional one after the global options. */
export function commandOf(args) {
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--') return args[i + 1];
    if (a === '--warehouse') {
      i++;
      continue;
    }
    if (a.startsWith('-')) continue;
    return a;
  }
  return undefined;
}

/**
 * What to relaunch with, or null to run in this process: only a bulk-input command, only when
 * node runs with no flags of its own (a user's `--inspect`, `--import` or heap flag means they
 * chose the process's settings), never in the relaunched child itself, and not when
 * VARVE_NO_RELAUNCH is set.
 */
export function relaunchArgs(args, execArgv, env, pid = process.pid) {
  if (env[LAUNCHED_ENV] || env.VARVE_NO_RELAUNCH || execArgv.length > 0) return null;
  const command = commandOf(args) ?? '';
  if (!BULK_COMMANDS.has(command)) return null;
  return {
    args,
    nodeFlags:
      command === 'write' || command === 'delete' ? [...CHILD_NODE_FLAGS, ...WRITE_NODE_FLAGS] : CHILD_NODE_FLAGS,
    // A user's own MALLOC_ARENA_MAX wins.
    env: { ...env, MALLOC_ARENA_MAX: env.MALLOC_ARENA_MAX ?? '2', [LAUNCHED_ENV]: String(pid) },
  };
}

/**
 * In the relaunched child: dies (SIGKILL, as the launcher did) when the launcher is gone, which
 * closes the IPC channel it opened. The channel does not keep the process alive.
 */
export function exitWithLauncher() {
  const launcher = Number(process.env[LAUNCHED_ENV]);
  if (!launcher) return;
  // Not passed on: a varve this process starts decides for itself.
  delete process.env[LAUNCHED_ENV];
  const die = () => process.kill(process.pid, 'SIGKILL');
  if (process.channel && process.connected) {
    process.channel.unref();
    process.on('disconnect', die);
  } else if (process.ppid !== launcher) {
    // The channel closed while node was starting, before this ran: the launcher is gone.
    die();
  }
}

/** Runs `script` with `relaunch` in a child node process and ends this process as the child ends. */
export function runRelaunched(script, relaunch) {
  // The IPC channel carries nothing: it closes when this process dies, however it dies (kill -9
  // included), and the child then ends itself (exitWithLauncher), so a killed `varve write` stops
  // writing as it did in one process.
  const child = spawn(process.execPath, [...relaunch.nodeFlags, script, ...relaunch.args], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env: relaunch.env,
  });
  const forward = (signal) => {
    // A terminal's Ctrl-C reaches the whole process group, the child included; passing it on
    // again is harmless (the CLI keeps the default disposition) and reaches a child that
    // runs in its own group (a `kill` of this process alone).
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  const signals =
    process.platform === 'win32' ? ['SIGINT', 'SIGTERM', 'SIGBREAK'] : ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'];
  for (const s of signals) process.on(s, forward);
  child.on('error', (e) => {
    process.stderr.write(`varve: cannot start node (${process.execPath}) for the command: ${e.message}\n`);
    process.exitCode = 1;
  });
  child.on('exit', (code, signal) => {
    for (const s of signals) process.off(s, forward);
    if (signal) {
      // Die of the same signal, so a shell sees what killed the command (e.g. 130 for SIGINT).
      process.kill(process.pid, signal);
      return;
    }
    process.exitCode = code ?? 1;
  });
}
