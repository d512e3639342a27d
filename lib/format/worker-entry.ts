/**
 * What a pool of worker threads needs: the entry file of its worker, how many threads to run, and
 * how an error crosses from a worker to the calling thread. Used by the encoder pool
 * (encoder-pool.ts, encode-worker.ts) and the decode pool (decode-pool.ts, decode-worker.ts).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CorruptMetadataError, InvalidArgumentError, SchemaMismatchError } from '../errors.js';
import type { SerializedError } from './encoder-protocol.js';

/** How a worker is started: a compiled entry file, or the TypeScript source through tsx (a clone, tests). */
export type WorkerEntry = { file: string } | { eval: string };

/** The default never starts more workers than this, whatever the core count. */
const MAX_DEFAULT_THREADS = 4;
/** Lambda gives a function one vCPU per 1,769 MB of memory, whatever core count the OS reports. */
const LAMBDA_MB_PER_VCPU = 1769;

/**
 * The worker entry `<name>.js` next to this module (tsc's dist/, or a bundle's folder, where the
 * build emits it beside the bundle), else `<name>.ts` run through tsx's loader (the sources in a
 * clone); null when neither is there. `dir`: look beside another module's folder instead (a
 * worker of a higher layer), computed by that module as this one computes its own.
 */
export function findWorkerEntry(name: string, dir?: string): WorkerEntry | null {
  // In a CommonJS bundle (Lambda) import.meta is empty and __dirname is the bundle's folder; the
  // ESM CLI bundle defines __dirname too; tsc's ESM output has import.meta.url only.
  const here = dir ?? (typeof __dirname === 'string' ? __dirname : path.dirname(fileURLToPath(import.meta.url)));
  const js = path.join(here, `${name}.js`);
  if (existsSync(js)) return { file: js };
  const ts = path.join(here, `${name}.ts`);
  if (!existsSync(ts)) return null;
  let api: string;
  try {
    api = path.join(
      path.dirname(createRequire(path.join(here, 'noop.js')).resolve('tsx/package.json')),
      'dist/esm/api/index.mjs',
    );
  } catch {
    return null;
  }
  if (!existsSync(api)) return null;
  const load = `import(${JSON.stringify(pathToFileURL(api).href)}).then((m) => { m.register(); return import(${JSON.stringify(pathToFileURL(ts).href)}); })`;
  return { eval: load };
}

/**
 * A pool's default thread count: the environment variable `envName` when set (0 to 64); else the
 * available cores (at most 4; on Lambda the vCPUs its memory size buys), and 0 — work on the
 * calling thread — with fewer than two.
 */
export function defaultPoolThreads(envName: string, env: NodeJS.ProcessEnv = process.env): number {
  const set = env[envName];
  if (set !== undefined && set.trim() !== '') {
    const n = Number(set);
    if (!Number.isInteger(n) || n < 0 || n > 64) {
      throw new InvalidArgumentError(
        `${envName} must be a whole number from 0 to 64 (0 works on the calling thread), got "${set}"`,
      );
    }
    return n;
  }
  let cpus = os.availableParallelism();
  const lambdaMB = Number(env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE);
  if (lambdaMB > 0) cpus = Math.min(cpus, Math.floor(lambdaMB / LAMBDA_MB_PER_VCPU));
  return cpus >= 2 ? Math.min(cpus, MAX_DEFAULT_THREADS) : 0;
}

/** A worker's error as it is posted to the calling thread. */
export function serializeWorkerError(e: unknown): SerializedError {
  if (e instanceof Error) return { name: e.name, message: e.message, stack: e.stack };
  return { name: 'Error', message: String(e) };
}

// The WebAssembly global is missing from the project's type libs (ES2023 + node), not from Node.
const WasmRuntimeError = (globalThis as unknown as { WebAssembly: { RuntimeError: ErrorConstructor } }).WebAssembly
  .RuntimeError;

/** The classes a worker's error is rebuilt as, by name: what the inline encode and decode throw. */
const REMOTE_ERRORS: Record<string, new (message: string) => Error> = {
  InvalidArgumentError,
  SchemaMismatchError,
  CorruptMetadataError,
  RuntimeError: WasmRuntimeError,
};

/** The error a worker reported, as the class the inline path would have thrown (by name), with the worker's stack and `thread` named. */
export function remoteWorkerError(s: SerializedError, thread: string): Error {
  const Known = REMOTE_ERRORS[s.name];
  const e = Known !== undefined ? new Known(s.message) : Object.assign(new Error(s.message), { name: s.name });
  if (s.stack) e.stack = `${s.stack}\n    (in ${thread})`;
  return e;
}
