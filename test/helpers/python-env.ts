/**
 * A Python with pyarrow and fastavro for tests that check varve's output with an independent
 * reader. The venv is created once per checkout under node_modules/.cache (the first test run
 * pays `pip install`; every later run reuses it), from the first python3 that can make one (the
 * machine's pyenv Python is not on PATH for non-login shells, so it is searched explicitly, like
 * .ci/run does for moto). When pip cannot install the packages, CI (CI=true) fails with the
 * reason; elsewhere the caller gets `unavailable` and says loudly that it skipped.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const VENV = join(ROOT, 'node_modules/.cache/varve-python-venv');
const LOCK = `${VENV}.lock`;
const PACKAGES = ['pyarrow', 'fastavro'];

/** A python3 able to create a venv with pip, or undefined. */
function findPython(): string | undefined {
  const pyenv = join(homedir(), '.pyenv/versions');
  const candidates = ['python3', join(homedir(), '.pyenv/shims/python3'), '/usr/bin/python3', '/usr/local/bin/python3'];
  if (existsSync(pyenv)) for (const v of readdirSync(pyenv)) candidates.push(join(pyenv, v, 'bin/python3'));
  for (const p of candidates) {
    const r = spawnSync(p, ['-c', 'import venv, ensurepip'], { stdio: 'ignore' });
    if (r.status === 0) return p;
  }
  return undefined;
}

function ready(python: string): boolean {
  return existsSync(python) && spawnSync(python, ['-c', 'import pyarrow, fastavro'], { stdio: 'ignore' }).status === 0;
}

/** Waits for another test process that is creating the venv (a mkdir lock; a stale one is taken after 10 minutes). */
function lock(): () => void {
  mkdirSync(dirname(LOCK), { recursive: true });
  for (;;) {
    try {
      mkdirSync(LOCK);
      return () => rmSync(LOCK, { recursive: true, force: true });
    } catch {
      if (Date.now() - statSync(LOCK, { throwIfNoEntry: false })!.mtimeMs > 600_000)
        rmSync(LOCK, { recursive: true, force: true });
      else spawnSync('sleep', ['1']);
    }
  }
}

/** The venv's python path, or the reason there is none. Throws under CI=true instead of returning a reason. */
export function pythonWithPyarrow(): { python: string } | { unavailable: string } {
  const python = join(VENV, 'bin/python');
  if (ready(python)) return { python };
  const unlock = lock();
  try {
    if (ready(python)) return { python };
    const base = findPython();
    let reason: string | undefined;
    if (base === undefined) reason = 'no python3 with venv and ensurepip found (tried python3, ~/.pyenv, /usr/bin)';
    else {
      try {
        rmSync(VENV, { recursive: true, force: true });
        execFileSync(base, ['-m', 'venv', VENV], { stdio: 'pipe' });
        execFileSync(python, ['-m', 'pip', 'install', '--quiet', ...PACKAGES], { stdio: 'pipe', timeout: 600_000 });
      } catch (e) {
        const err = e as { stderr?: Buffer; message: string };
        reason = `pip install ${PACKAGES.join(' ')} into ${VENV} failed: ${err.stderr?.toString().trim().split('\n').slice(-3).join(' ') || err.message}`;
      }
    }
    if (reason === undefined && ready(python)) return { python };
    reason ??= `the venv at ${VENV} cannot import ${PACKAGES.join(', ')}`;
    if (process.env.CI === 'true') {
      throw new Error(
        `the independent Iceberg reader needs Python with ${PACKAGES.join(' and ')} from the package index: ${reason}`,
      );
    }
    return { unavailable: reason };
  } finally {
    unlock();
  }
}

/** Runs a Python script of test/ with the venv's python; returns stdout (throws with stderr on failure). */
export function runPython(python: string, script: string, args: string[]): string {
  const r = spawnSync(python, [join(ROOT, script), ...args], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`${script} ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}
