/**
 * Runs a benchmark script in a child Node process (through tsx) and returns the JSON object it
 * prints as its last stdout line: peak memory is only meaningful per process.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { BenchCheckError } from './checksum.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** Runs `node --import tsx <script> ...args` in the repo root; rejects on a non-zero exit. */
export function runChild<T>(
  script: string,
  args: string[],
  opts: { timeoutMs?: number; nodeArgs?: string[] } = {},
): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), '--import', 'tsx', script, ...args], {
      cwd: REPO,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 600_000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) {
        const tail = err.trim().split('\n').slice(-15).join('\n');
        const error = /WRONG RESULT/.test(err)
          ? new BenchCheckError(`${script} failed its check:\n${tail}`)
          : new Error(`${script} ${args.join(' ')} exited with ${code ?? signal}:\n${tail}`);
        reject(error);
        return;
      }
      const last = out.trim().split('\n').pop() ?? '';
      try {
        resolve(JSON.parse(last) as T);
      } catch {
        reject(new Error(`${script} printed no JSON result; stdout ended with: ${last.slice(0, 200)}`));
      }
    });
  });
}
