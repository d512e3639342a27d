/**
 * `varve --help` loads the command declarations only (issue 32: the installed help took 0.86 s
 * loading parquet-wasm, its 4.95 MB .wasm, Arrow and the AWS SDK). The CLI is bundled as the
 * package builds it (scripts/build-cli.ts) into a temporary folder, and what help loads is checked
 * two ways, neither a time:
 *   - esbuild's metafile: the files cli.mjs imports statically, and the sources bundled in them;
 *   - the running process: a module loader hook records every file node loads for `--help`, for
 *     each command's `--help` and for a mistyped flag, and for a command that runs (which must load
 *     more, or the hook would prove nothing).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PARQUET_WASM } from '../../infra/lambda.js';
import { buildCli, CLI_ENTRY_FILE, staticClosure } from '../../scripts/build-cli.js';
import { jsonlRows } from '../helpers/cli-process.js';

const ROOT = path.join(__dirname, '../..');

/** The packages a declaration must never pull in: the codec, the columnar library, the AWS SDK. */
const HEAVY = /node_modules\/(parquet-wasm|apache-arrow|flatbuffers|@aws-sdk|@smithy|csv-parse|cli-progress)\//;

let dir: string;
let meta: Metafile;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'varve-help-loads-'));
  meta = await buildCli(ROOT, path.join(dir, 'dist'));
  // A command that runs may load parquet-wasm, which reads its .wasm beside the bundle.
  copyFileSync(path.join(ROOT, PARQUET_WASM), path.join(dir, 'dist', 'parquet_wasm_bg.wasm'));
  // The loader hook: every file URL node loads, one line each, into the file named by VARVE_LOAD_LOG.
  writeFileSync(
    path.join(dir, 'hooks.mjs'),
    "import { appendFileSync } from 'node:fs';\n" +
      'export async function load(url, context, next) {\n' +
      "  if (url.startsWith('file:')) appendFileSync(process.env.VARVE_LOAD_LOG, url + '\\n');\n" +
      '  return next(url, context);\n' +
      '}\n',
  );
  writeFileSync(
    path.join(dir, 'register.mjs'),
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(path.join(dir, 'hooks.mjs')).href)});\n`,
  );
}, 300_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the built CLI with `args`; returns its output and the bundle files it loaded (relative to dist/). */
function runBuilt(
  args: string[],
  env: Record<string, string> = {},
): { code: number; out: string; err: string; loaded: string[] } {
  const log = path.join(dir, `loaded-${Math.random().toString(36).slice(2)}.log`);
  writeFileSync(log, '');
  const r = spawnSync(
    process.execPath,
    ['--import', pathToFileURL(path.join(dir, 'register.mjs')).href, path.join(dir, 'dist', CLI_ENTRY_FILE), ...args],
    { encoding: 'utf8', cwd: dir, env: { ...process.env, ...env, VARVE_LOAD_LOG: log }, timeout: 300_000 },
  );
  const dist = pathToFileURL(path.join(dir, 'dist')).href + '/';
  const loaded = readFileSync(log, 'utf8')
    .split('\n')
    .filter((u) => u.startsWith(dist))
    .map((u) => u.slice(dist.length));
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr, loaded: [...new Set(loaded)].sort() };
}

describe('varve --help (the CLI as the package builds it)', () => {
  it('imports statically only the declarations: no parquet-wasm, Arrow or AWS SDK in what cli.mjs loads', () => {
    // Act
    const { files, inputs } = staticClosure(meta, path.join(dir, 'dist'), CLI_ENTRY_FILE);

    // Assess: the heavy packages are in the bundle, but in chunks only an action imports.
    const all = Object.values(meta.outputs).flatMap((o) => Object.keys(o.inputs));
    expect(all.some((i) => i.includes('node_modules/parquet-wasm/'))).toBe(true);
    expect(all.some((i) => i.includes('node_modules/@aws-sdk/client-s3/'))).toBe(true);
    expect(inputs.filter((i) => HEAVY.test(i))).toEqual([]);
    expect(inputs.filter((i) => i.startsWith('lib/') && !i.startsWith('lib/cli/'))).toEqual([
      'lib/errors.ts',
      'lib/json.ts',
      'lib/schema/option-values.ts',
      'lib/stream/redrive-queues.ts',
      'lib/table/system-table-names.ts',
    ]);
    // Every module of the bundle is in exactly one output file (no chunk duplicates another).
    const seen = new Map<string, string>();
    for (const [file, o] of Object.entries(meta.outputs))
      for (const i of Object.keys(o.inputs)) {
        expect(seen.get(i), `${i} in ${file} and ${seen.get(i)}`).toBeUndefined();
        seen.set(i, file);
      }
    expect(files).toContain(CLI_ENTRY_FILE);
  });

  it('loads only those files for --help, every command --help and a mistyped flag; a command that runs loads more', () => {
    // Prepare
    const { files } = staticClosure(meta, path.join(dir, 'dist'), CLI_ENTRY_FILE);

    // Act
    const help = runBuilt(['--help']);

    // Assess: the help lists every command, and loaded nothing beyond the declarations.
    expect(help.code).toBe(0);
    const commands = [...help.out.matchAll(/^ {2}([a-z][a-z-]*) /gm)].map((m) => m[1]).filter((c) => c !== 'help');
    expect(commands).toHaveLength(24);
    expect(help.loaded).toEqual(files);
    for (const command of commands) {
      const r = runBuilt([command, '--help']);
      expect(r.code, `${command} --help: ${r.err}`).toBe(0);
      expect(r.out).toContain(`Usage: varve ${command}`);
      expect(r.loaded, `${command} --help`).toEqual(files);
    }
    // The whole help of a command, flags and their texts (the declarations are all there).
    expect(runBuilt(['read', '--help']).out).toMatch(/--where <predicate>[\s\S]*--explain[\s\S]*--format <format>/);
    expect(runBuilt(['sys', '--help']).out).toMatch(/snapshots\|changelogs\|files.*\|iceberg/);
    const typo = runBuilt(['read', 'db.t', '--wher', 'x']);
    expect(typo.code).toBe(2);
    expect(typo.err).toMatch(/unknown option '--wher'/);
    expect(typo.loaded).toEqual(files);

    // A command that runs imports its action's chunks: the hook sees them (it can fail).
    const tables = runBuilt(['--warehouse', path.join(dir, 'wh'), 'tables']);
    expect(tables.code, tables.err).toBe(0);
    expect(tables.out).toMatch(/no tables yet/);
    expect(tables.loaded.length).toBeGreaterThan(files.length);
  });

  it('loads no AWS SDK for a command on a folder warehouse, the S3 client for one on S3, DynamoDB for the DynamoDB catalog only', () => {
    // Prepare: which output files hold AWS SDK code (relative to dist/, as runBuilt lists them).
    const out = path.join(dir, 'dist');
    const sdk = new Set(
      Object.entries(meta.outputs)
        .filter(([, o]) => Object.keys(o.inputs).some((i) => /node_modules\/(@aws-sdk|@smithy)\//.test(i)))
        .map(([file]) => path.relative(out, path.resolve(file))),
    );
    const withSdk = (loaded: string[]) => loaded.filter((f) => sdk.has(f));
    const dynamo = new Set(
      Object.entries(meta.outputs)
        .filter(([, o]) => Object.keys(o.inputs).some((i) => i.includes('node_modules/@aws-sdk/client-dynamodb/')))
        .map(([file]) => path.relative(out, path.resolve(file))),
    );
    const withDynamo = (loaded: string[]) => loaded.filter((f) => dynamo.has(f));
    expect(sdk.size).toBeGreaterThan(0);
    const wh = path.join(dir, 'wh-folder');
    const csv = path.join(dir, 'rows.csv');
    writeFileSync(csv, 'id,name\n1,a\n2,b\n');

    // Act: create, write and read a table in a folder; list the tables of an unreachable S3 warehouse.
    const create = runBuilt([
      '--warehouse',
      wh,
      'create',
      'db.t',
      '--schema',
      'id BIGINT, name STRING',
      '--primary-key',
      'id',
    ]);
    const write = runBuilt(['--warehouse', wh, 'write', 'db.t', csv]);
    const read = runBuilt(['--warehouse', wh, 'read', 'db.t', '--format', 'jsonl']);
    const aws = {
      AWS_ENDPOINT_URL: 'http://127.0.0.1:1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_REGION: 'us-east-1',
      AWS_MAX_ATTEMPTS: '1',
    };
    const s3 = runBuilt(['--warehouse', 's3://bucket/wh', 'tables'], aws);
    const catalogTable = runBuilt(['--warehouse', 's3://bucket/wh', 'tables'], {
      ...aws,
      VARVE_CATALOG_TABLE: 'catalog',
    });

    // Assess: the folder commands ran (and loaded Arrow and parquet-wasm) without the SDK; S3 loads it.
    for (const r of [create, write, read]) {
      expect(r.code, r.err).toBe(0);
      expect(withSdk(r.loaded)).toEqual([]);
    }
    expect(write.out).toMatch(/wrote 2 rows/);
    expect(jsonlRows(read.out)).toEqual([
      { id: 1, name: 'a' },
      { id: 2, name: 'b' },
    ]);
    expect(s3.code).not.toBe(0);
    expect(s3.err).toMatch(/cannot reach S3 at http:\/\/127\.0\.0\.1:1/);
    expect(withSdk(s3.loaded).length).toBeGreaterThan(0);
    // The DynamoDB client only for the DynamoDB catalog.
    expect(dynamo.size).toBeGreaterThan(0);
    expect(withDynamo(s3.loaded)).toEqual([]);
    expect(catalogTable.code).not.toBe(0);
    expect(withDynamo(catalogTable.loaded).length, catalogTable.err).toBeGreaterThan(0);
  });
});
