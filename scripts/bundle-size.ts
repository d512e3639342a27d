/**
 * Bundles every Lambda handler of functions/ the way infra/lambda.ts does (esbuild, CJS, node22,
 * minified, `@aws-sdk/*` left to the runtime), adds parquet-wasm's .wasm, zips each package and
 * prints its size; fails when a bundle is not clean CJS (top-level await or `import.meta` anywhere
 * it imports), does not load, or zips to more than 3 MB.
 *
 *   npx tsx scripts/bundle-size.ts            # every function
 *   npx tsx scripts/bundle-size.ts ingest     # some
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { BUNDLE_SETTINGS } from '../infra/lambda.js';
import { zipArchive } from './zip.js';

/** The repository root. */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** parquet-wasm's Node build loads this from the bundle's folder (infra/lambda.ts copies it there). */
const WASM = path.join(ROOT, 'node_modules/parquet-wasm/node/parquet_wasm_bg.wasm');
/** Above this a package is too big to keep cold starts short (Lambda itself takes 50 MB). */
export const MAX_ZIPPED_BYTES = 3 * 1024 * 1024;

/** One bundled function. */
export interface FunctionBundle {
  name: string;
  /** Minified CJS bundle. */
  code: string;
  /** esbuild's warnings: for a Lambda bundle every one is a failure (e.g. `import.meta` emptied in CJS). */
  warnings: string[];
  jsBytes: number;
  zippedBytes: number;
}

/** The handler names of functions/ (each `functions/<name>.ts` is a Lambda entry). */
export function functionNames(): string[] {
  return readdirSync(path.join(ROOT, 'functions'))
    .filter((f) => f.endsWith('.ts') && f !== 'index.ts')
    .map((f) => f.slice(0, -3))
    .sort();
}

/** Bundles `functions/<name>.ts` with infra/lambda.ts's esbuild settings and measures its zipped package. */
export async function bundleFunction(name: string): Promise<FunctionBundle> {
  const r = await build({
    entryPoints: [path.join(ROOT, 'functions', `${name}.ts`)],
    bundle: true,
    platform: 'node',
    format: BUNDLE_SETTINGS.format,
    target: BUNDLE_SETTINGS.target,
    minify: BUNDLE_SETTINGS.minify,
    keepNames: BUNDLE_SETTINGS.keepNames,
    external: [...BUNDLE_SETTINGS.external],
    // As the CDK bundling and the build do: the one silenced warning is the encoder pool's
    // import.meta.url, read only where __dirname is missing (ESM), never in these CJS bundles.
    logOverride: { ...BUNDLE_SETTINGS.logOverride },
    write: false,
    logLevel: 'silent',
    absWorkingDir: ROOT,
  });
  const code = r.outputFiles[0].text;
  const wasm = readFileSync(WASM);
  const zip = zipArchive([
    { name: 'index.js', data: Buffer.from(code) },
    { name: 'parquet_wasm_bg.wasm', data: wasm },
  ]);
  return {
    name,
    code,
    warnings: r.warnings.map((w) => `${w.location?.file ?? '?'}:${w.location?.line ?? '?'}: ${w.text}`),
    jsBytes: Buffer.byteLength(code),
    zippedBytes: zip.length,
  };
}

/**
 * Loads a bundle in a fresh Node process, from a folder holding only it and the .wasm (as Lambda
 * does; the AWS SDK resolves from the project, standing in for the runtime's), and returns the
 * type of its `handler` export.
 */
export function loadBundle(b: FunctionBundle): string {
  const dir = mkdtempSync(path.join(tmpdir(), `varve-bundle-${b.name}-`));
  try {
    writeFileSync(path.join(dir, 'index.js'), b.code);
    writeFileSync(path.join(dir, 'parquet_wasm_bg.wasm'), readFileSync(WASM));
    return execFileSync(process.execPath, ['-e', `process.stdout.write(typeof require('./index.js').handler)`], {
      cwd: dir,
      env: { ...process.env, NODE_PATH: path.join(ROOT, 'node_modules'), NODE_NO_WARNINGS: '1' },
      encoding: 'utf8',
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function kib(n: number): string {
  return `${(n / 1024).toFixed(0).padStart(6)} KiB`;
}

async function main(): Promise<void> {
  const names = process.argv.slice(2).length > 0 ? process.argv.slice(2) : functionNames();
  let failed = false;
  console.log(
    `${'function'.padEnd(10)} ${'index.js'.padStart(10)} ${'zipped'.padStart(10)}   (zip = index.js + parquet_wasm_bg.wasm, limit ${kib(MAX_ZIPPED_BYTES).trim()})`,
  );
  for (const name of names) {
    const b = await bundleFunction(name);
    const problems = [...b.warnings];
    if (b.zippedBytes > MAX_ZIPPED_BYTES)
      problems.push(`zipped package is ${kib(b.zippedBytes).trim()}, above ${kib(MAX_ZIPPED_BYTES).trim()}`);
    let loaded = '';
    try {
      loaded = loadBundle(b);
      if (loaded !== 'function') problems.push(`the bundle loads but exports no handler function (got ${loaded})`);
    } catch (e) {
      problems.push(`the bundle does not load: ${(e as Error).message.split('\n')[0]}`);
    }
    console.log(`${name.padEnd(10)} ${kib(b.jsBytes)} ${kib(b.zippedBytes)}${problems.length ? '   FAIL' : ''}`);
    for (const p of problems) console.log(`    ${p}`);
    failed ||= problems.length > 0;
  }
  if (failed) process.exitCode = 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
