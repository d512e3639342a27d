/**
 * The Python of the tests that check varve's output with an independent reader: one venv for all
 * of them, .ci/.venv, made by .ci/python-venv.sh (pyarrow and fastavro for the spec reader, and
 * what pyiceberg needs; .ci/run makes it before the suite). A test process that finds it missing
 * runs that script under a mkdir lock shared by test processes: the first run in a fresh clone
 * pays `pip install`, every later run reuses it. When it cannot be made, CI (CI=true) fails with
 * the reason; elsewhere the caller gets `unavailable` and says loudly that it skipped.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The venv's python. */
export const VENV_PYTHON = join(ROOT, '.ci/.venv/bin/python');
const LOCK = join(ROOT, '.ci/.venv.lock');
const PACKAGES = ['pyarrow', 'fastavro'];

function ready(python: string): boolean {
  return existsSync(python) && spawnSync(python, ['-c', 'import pyarrow, fastavro'], { stdio: 'ignore' }).status === 0;
}

/**
 * Makes .ci/.venv, or checks it, with .ci/python-venv.sh under a mkdir lock shared by test
 * processes (a stale one is taken after 10 minutes). Undefined when it is ready, else why not.
 */
export function ensureVenv(): string | undefined {
  mkdirSync(dirname(LOCK), { recursive: true });
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      const age = Date.now() - (statSync(LOCK, { throwIfNoEntry: false })?.mtimeMs ?? 0);
      if (age > 600_000) rmSync(LOCK, { recursive: true, force: true });
      else spawnSync('sleep', ['1']);
    }
  }
  try {
    const r = spawnSync('bash', [join(ROOT, '.ci/python-venv.sh')], { encoding: 'utf8', timeout: 900_000 });
    return r.status === 0 ? undefined : `.ci/python-venv.sh failed (${r.status ?? r.signal}): ${r.stderr.trim()}`;
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

/** The venv's python path, or the reason there is none. Throws under CI=true instead of returning a reason. */
export function pythonWithPyarrow(): { python: string } | { unavailable: string } {
  // Ready: one import check, no script (as fast as the venv this replaced under node_modules/.cache).
  if (ready(VENV_PYTHON)) return { python: VENV_PYTHON };
  const reason =
    ensureVenv() ?? (ready(VENV_PYTHON) ? undefined : `the venv .ci/.venv cannot import ${PACKAGES.join(', ')}`);
  if (reason === undefined) return { python: VENV_PYTHON };
  if (process.env.CI === 'true') {
    throw new Error(
      `the independent Iceberg reader needs Python with ${PACKAGES.join(' and ')} from the package index: ${reason}`,
    );
  }
  return { unavailable: reason };
}

/** Runs a Python script of test/ with the venv's python; returns stdout (throws with stderr on failure). */
export function runPython(python: string, script: string, args: string[]): string {
  const r = spawnSync(python, [join(ROOT, script), ...args], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`${script} ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}
