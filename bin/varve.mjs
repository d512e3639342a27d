#!/usr/bin/env node
// Launcher for the varve CLI. The installed package runs the prebuilt one-file bundle
// (dist/cli.mjs, made by `npm run build`), which starts in a fraction of a second. In a clone,
// where the TypeScript sources are the truth and dist/ may be stale or absent, it runs the
// sources through tsx (a devDependency), so `npx varve` works right after `npm ci`.
//
// The bulk-input commands (`write`, `delete`) and `count` (a whole-table scan) run in a
// child node process started with memory settings a process cannot give itself once running
// (see bin/launch.mjs); this process only waits for it, passing on its exit code and signals.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { exitWithLauncher, relaunchArgs, runRelaunched } from './launch.mjs';
import { unsupportedNode } from './node-version.mjs';

// First, before anything of varve is loaded (only the launcher's own modules are, which need no
// newer Node): an older Node stops here with one line saying what to install.
const tooOld = unsupportedNode(process.versions.node);
if (tooOld) {
  process.stderr.write(`varve: ${tooOld}\n`);
  process.exit(1);
}
const self = fileURLToPath(import.meta.url);
const relaunch = relaunchArgs(process.argv.slice(2), process.execArgv, process.env);
if (relaunch) {
  runRelaunched(self, relaunch);
} else {
  exitWithLauncher();
  const source = new URL('../lib/cli/entry.ts', import.meta.url);
  if (existsSync(source) && !process.env.VARVE_USE_DIST) {
    const { register } = await import('tsx/esm/api');
    register();
    await import(source.href);
  } else {
    await import(new URL('../dist/cli.mjs', import.meta.url).href);
  }
}
