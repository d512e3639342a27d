/**
 * `npm run build` (also run by `npm pack` through prepack): the package's dist/ folder.
 *   dist/{lib,functions,infra}/  ESM + .d.ts from tsc (the `varve`, `varve/aws`, `varve/cdk` entries)
 *   dist/cli.mjs                 the CLI, minified by esbuild (scripts/build-cli.ts): the command
 *   dist/cli-*.mjs               declarations in cli.mjs, what the commands run in chunks beside it
 *                                that an action loads when it runs, so `varve --help` loads neither
 *                                Arrow, parquet-wasm nor the AWS SDK (+ parquet-wasm's .wasm)
 *   dist/lambda/<name>/index.js  each built-in handler prebuilt with the constructs' own esbuild
 *                                settings, so `varve/cdk` synthesizes without the TypeScript sources
 *   dist/lambda/shared/          the pools' workers for those bundles (one copy; with the CLI's .wasm,
 *                                infra/lambda.ts puts them beside a handler when it makes its asset)
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { BUNDLE_SETTINGS, LAMBDA_WORKERS, PARQUET_WASM } from '../infra/lambda.js';
import { buildCli, buildWorker } from './build-cli.js';
import { functionNames } from './bundle-size.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = path.join(ROOT, 'dist');

async function main(): Promise<void> {
  rmSync(DIST, { recursive: true, force: true });
  execFileSync(
    process.execPath,
    [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', path.join(ROOT, 'tsconfig.build.json')],
    { stdio: 'inherit' },
  );

  // The CLI (cli.mjs and its chunks) and, next to it, the encoder, decode and merge pools' workers
  // (lib/format/encoder-pool.ts, decode-pool.ts and lib/table/merge-pool.ts look for
  // encode-worker.js / decode-worker.js / merge-worker.js beside the module that holds them, here
  // a chunk of the CLI).
  await buildCli(ROOT, DIST);
  for (const worker of LAMBDA_WORKERS) await buildWorker(ROOT, worker.entry, path.join(DIST, worker.file));
  copyFileSync(path.join(ROOT, PARQUET_WASM), path.join(DIST, 'parquet_wasm_bg.wasm'));

  // The Lambda bundles: each handler alone in dist/lambda/<name>/index.js; the pools' workers (the
  // same for every handler) once in dist/lambda/shared/, and parquet-wasm's .wasm once, the CLI's
  // (dist/parquet_wasm_bg.wasm). infra/lambda.ts assembles a function's asset from the three at
  // synth: the package ships each shared file once (the .wasm alone is 4.95 MB), not per handler.
  const bundle = async (entry: string, outfile: string) =>
    build({
      entryPoints: [entry],
      outfile,
      bundle: true,
      platform: 'node',
      format: BUNDLE_SETTINGS.format,
      target: BUNDLE_SETTINGS.target,
      minify: BUNDLE_SETTINGS.minify,
      keepNames: BUNDLE_SETTINGS.keepNames,
      sourcemap: BUNDLE_SETTINGS.sourcemap,
      external: [...BUNDLE_SETTINGS.external],
      logOverride: { ...BUNDLE_SETTINGS.logOverride },
      logLevel: 'warning',
    });
  for (const worker of LAMBDA_WORKERS)
    await bundle(path.join(ROOT, worker.entry), path.join(DIST, 'lambda', 'shared', worker.file));
  for (const name of functionNames()) {
    const outdir = path.join(DIST, 'lambda', name);
    mkdirSync(outdir, { recursive: true });
    await bundle(path.join(ROOT, 'functions', `${name}.ts`), path.join(outdir, 'index.js'));
  }
  console.log(`built ${path.relative(ROOT, DIST)}/: library (tsc), cli.mjs, lambda/{${functionNames().join(',')}}`);
}

await main();
