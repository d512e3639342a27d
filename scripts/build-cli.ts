/**
 * The CLI's esbuild bundle (scripts/build.ts builds it into dist/; test/cli/help-loads.test.ts into
 * a temporary folder to see what `varve --help` loads).
 *
 * Split ESM: `cli.mjs` holds what every command needs to be declared (commander, the flag
 * definitions and their help texts); each command's action imports the rest of varve dynamically
 * (lib/cli/commands/), and esbuild puts that code into `cli-chunk-<hash>.mjs` files shared by
 * the commands, each module in exactly one chunk (no copy of parquet-wasm or the AWS SDK per
 * command). So `varve --help` parses and runs commander and the declarations only, while a
 * command loads its own chunks when it runs.
 *
 * The chunks sit beside cli.mjs, the pools' workers and parquet-wasm's .wasm: parquet-wasm's Node
 * build reads its .wasm from `__dirname`, and the pools look for their workers beside the module
 * that holds them (now a chunk), so every output file must live in the one folder.
 */
import path from 'node:path';
import { build, type Metafile } from 'esbuild';
import { BUNDLE_SETTINGS } from '../infra/lambda.js';

/** The CLI's entry file in the output folder. */
export const CLI_ENTRY_FILE = 'cli.mjs';

/**
 * Bundled CommonJS dependencies call require(), and parquet-wasm's Node build reads its .wasm from
 * __dirname: every output file of the ESM bundle (entry and chunks) gets both.
 */
const ESM_BANNER =
  "import { createRequire as __varveRequire } from 'node:module'; import { fileURLToPath as __varvePath } from 'node:url'; " +
  "const require = __varveRequire(import.meta.url); const __filename = __varvePath(import.meta.url); const __dirname = __varvePath(new URL('.', import.meta.url));";

/** Builds the CLI from `root`'s sources into `outdir` (cli.mjs and its chunks); returns esbuild's metafile. */
export async function buildCli(root: string, outdir: string): Promise<Metafile> {
  const result = await build({
    entryPoints: [{ in: path.join(root, 'lib/cli/entry.ts'), out: 'cli' }],
    outdir,
    outExtension: { '.js': '.mjs' },
    splitting: true,
    chunkNames: 'cli-[name]-[hash]',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Minified and with every dependency inlined: parsing less is most of the start (names kept,
    // as in the Lambda bundles: errors print their class).
    minify: true,
    keepNames: BUNDLE_SETTINGS.keepNames,
    banner: { js: ESM_BANNER },
    metafile: true,
    logLevel: 'warning',
  });
  return result.metafile;
}

/** A worker of the pools, bundled alone into `outfile` (found beside the module holding its pool). */
export async function buildWorker(root: string, entry: string, outfile: string): Promise<void> {
  await build({
    entryPoints: [path.join(root, entry)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    minify: true,
    keepNames: BUNDLE_SETTINGS.keepNames,
    banner: { js: ESM_BANNER },
    logLevel: 'warning',
  });
}

/**
 * The output files `entry` loads before any of its code runs (its static imports, transitively),
 * and the source files bundled into them: what a process that runs no dynamic import loads.
 */
export function staticClosure(meta: Metafile, outdir: string, entry: string): { files: string[]; inputs: string[] } {
  const byName = new Map(Object.entries(meta.outputs).map(([file, out]) => [path.resolve(file), out]));
  const files = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    const out = byName.get(file);
    if (!out) throw new Error(`esbuild's metafile has no output ${file}`);
    files.add(file);
    for (const i of out.imports) if (i.kind === 'import-statement' && !i.external) visit(path.resolve(i.path));
  };
  visit(path.resolve(outdir, entry));
  const inputs = [...files].flatMap((f) => Object.keys(byName.get(f)!.inputs));
  return { files: [...files].map((f) => path.relative(outdir, f)).sort(), inputs: inputs.sort() };
}
