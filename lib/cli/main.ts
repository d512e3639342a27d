/**
 * The `varve` command: create, write and read primary-key tables in a warehouse folder (default
 * `./warehouse`) or on S3 (`--warehouse s3://bucket/prefix`). Errors are one line on stderr with
 * a non-zero exit; set VARVE_DEBUG=1 for stack traces.
 *
 * This module and the command declarations it registers (lib/cli/commands/) load only commander
 * and light helpers: each action imports what it runs (the catalog, the table, Arrow,
 * parquet-wasm, the AWS SDK) when it runs, so `varve --help`, `varve X --help` and a mistyped
 * flag answer without loading them (scripts/build-cli.ts bundles those imports into chunks;
 * test/cli/help-loads.test.ts checks what help loads).
 */
import { existsSync, readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import * as v from 'valibot';
import { VarveError } from '../errors.js';
import { parseJsonFile } from '../json.js';
import { registerAlter } from './commands/alter.js';
import { registerAuditLog } from './commands/audit-log.js';
import { registerCompact } from './commands/compact.js';
import { registerCount } from './commands/count.js';
import { registerCreate } from './commands/create.js';
import { registerDelete } from './commands/delete.js';
import { registerDemo } from './commands/demo.js';
import { registerDescribe } from './commands/describe.js';
import { registerDrop } from './commands/drop.js';
import { registerDropPartition } from './commands/drop-partition.js';
import { registerExpire } from './commands/expire.js';
import { registerExportIceberg } from './commands/export-iceberg.js';
import { registerRead } from './commands/read.js';
import { registerRedrive } from './commands/redrive.js';
import { registerRemoveOrphans } from './commands/remove-orphans.js';
import { registerRescale } from './commands/rescale.js';
import { registerRollback } from './commands/rollback.js';
import { registerSys } from './commands/sys.js';
import { registerTables } from './commands/tables.js';
import { registerTag } from './commands/tag.js';
import { registerTail } from './commands/tail.js';
import { registerTruncate } from './commands/truncate.js';
import { registerVerify } from './commands/verify.js';
import { registerWrite } from './commands/write.js';
import type { Catalog } from '../catalog/catalog.js';
import { warehouseUri, type CliContext } from './context.js';
import { OutputClosedError, stdoutOutput } from './output.js';
import type { GlobalOptions } from './parse-flags.js';

/** The commands, one file each under lib/cli/commands/, in the order `varve --help` lists them. */
const COMMANDS: ReadonlyArray<(ctx: CliContext) => void> = [
  registerCreate,
  registerWrite,
  registerTruncate,
  registerDropPartition,
  registerRescale,
  registerDelete,
  registerRead,
  registerCount,
  registerAuditLog,
  registerSys,
  registerTag,
  registerRollback,
  registerTables,
  registerDescribe,
  registerAlter,
  registerDrop,
  registerCompact,
  registerExpire,
  registerVerify,
  registerRemoveOrphans,
  registerTail,
  registerDemo,
  registerRedrive,
  registerExportIceberg,
];

/** What the version lookup reads of a package.json. */
const PackageJsonSchema = v.looseObject({ name: v.optional(v.unknown()), version: v.optional(v.unknown()) });

/**
 * The package version: the nearest package.json named varve above this module (the sources, the
 * tsc output and the one-file CLI bundle all sit below the package root).
 */
export function varveVersion(): string {
  for (let dir = new URL('.', import.meta.url); dir.pathname !== '/'; dir = new URL('..', dir)) {
    const file = new URL('package.json', dir);
    if (!existsSync(file)) continue;
    const pkg = parseJsonFile(readFileSync(file, 'utf8'), PackageJsonSchema, file.pathname, { fix: 'reinstall varve' });
    if (pkg.name === 'varve' && typeof pkg.version === 'string' && pkg.version) return pkg.version;
  }
  return 'unknown';
}

/** Builds the program; `out` receives everything a command prints on stdout. */
export function buildProgram(out: (text: string) => void = (t) => process.stdout.write(t)): Command {
  const program = new Command();
  program
    .name('varve')
    .description('varve: streaming lakehouse tables (Paimon-style primary-key tables) on a folder or S3')
    .version(varveVersion(), '-V, --version', 'print the varve version')
    .option('--warehouse <uri>', 'warehouse folder or s3://bucket/prefix (default: $VARVE_WAREHOUSE or ./warehouse)')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  // The catalog's code (stores; the AWS SDK for S3 only) is loaded before an action runs, not to declare it.
  let openCatalog: ((uri: string) => Catalog) | undefined;
  program.hook('preAction', async () => {
    const uri = warehouseUri(program.opts<GlobalOptions>().warehouse);
    openCatalog ??= await (await import('./open-warehouse.js')).catalogOpener(uri);
  });
  const ctx: CliContext = {
    program,
    catalog: () => {
      if (!openCatalog) throw new Error('the catalog is opened by a command action, after the preAction hook');
      return openCatalog(warehouseUri(program.opts<GlobalOptions>().warehouse));
    },
    out,
    // Looked up when a status line is printed: runCli configures the output after building the program.
    status: (text) => program.configureOutput().writeErr?.(text),
  };
  for (const register of COMMANDS) register(ctx);
  return program;
}

/** Runs the CLI with `argv` (user arguments only) and returns the exit code. */
export async function runCli(
  argv: string[],
  io: { out?: (t: string) => void; err?: (t: string) => void } = {},
): Promise<number> {
  const err = io.err ?? ((t: string) => process.stderr.write(t));
  const out = io.out ?? stdoutOutput();
  const program = buildProgram(out);
  program.configureOutput({ writeErr: err, writeOut: out });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
    if (e instanceof OutputClosedError) return 0;
    if (process.env.VARVE_DEBUG) err(`${(e as Error).stack}\n`);
    if (e instanceof VarveError) err(`varve: ${e.message}\n`);
    else err(`varve: unexpected error: ${(e as Error).message ?? String(e)} (set VARVE_DEBUG=1 for details)\n`);
    return 1;
  }
}

const invokedDirectly = process.argv[1] && /lib[\\/]cli[\\/]main\.ts$/.test(process.argv[1]);
if (invokedDirectly) {
  runCli(process.argv.slice(2)).then((code) => process.exit(code));
}
