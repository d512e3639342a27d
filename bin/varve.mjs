#!/usr/bin/env node
// Launcher for the varve CLI: runs the TypeScript sources through tsx, so `npx varve` works
// right after `npm ci` with no build step.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../lib/cli/main.ts');
process.exitCode = await runCli(process.argv.slice(2));
