/**
 * Starts a moto server for the AWS tests when none is configured, so `npm test` works the same on
 * a laptop and in CI (where .ci/run starts moto and sets AWS_ENDPOINT_URL itself). The same helper
 * serves `npm run e2e:aws` (e2e/aws/moto.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureMoto, type Moto } from '../e2e/aws/moto.js';
import { makeCdkOutRoot } from './helpers/cdk-outdir.js';

/**
 * vitest runs the global setup once for the root config and once per project (vitest.config.ts has
 * two): the first call does the work, the others only count themselves, and the last teardown
 * undoes it (one moto, one temp root per run). Kept on globalThis: the calls may come from
 * separate instances of this module.
 */
const RUN = Symbol.for('varve.test.global-setup');
interface Run {
  users: number;
  ready: Promise<{ moto?: Moto; removeCdkOut: () => void; tempRoot: string }>;
}
const registry = globalThis as unknown as { [RUN]?: Run };

export async function setup(): Promise<void> {
  const run = registry[RUN];
  if (run) {
    run.users++;
    await run.ready;
    return;
  }
  registry[RUN] = { users: 1, ready: start() };
  await registry[RUN].ready;
}

async function start(): Promise<{ moto?: Moto; removeCdkOut: () => void; tempRoot: string }> {
  // Every temp folder of the run (the tests' warehouses, inputs, the processes they spawn) goes
  // under one root removed at the end: the workers and their children inherit TMPDIR, which
  // os.tmpdir() reads, so a test that keeps its folder for a failure's post-mortem leaves nothing
  // behind after the run.
  const tempRoot = mkdtempSync(join(tmpdir(), 'varve-test-run-'));
  process.env.TMPDIR = tempRoot;
  // Without moto the AWS tests skip themselves (or fail under VARVE_REQUIRE_MOTO=1).
  const moto = await ensureMoto();
  // The CDK test Apps synthesise under one folder per run, removed at the end (helpers/cdk-outdir.ts).
  const removeCdkOut = makeCdkOutRoot();
  return { moto, removeCdkOut, tempRoot };
}

export async function teardown(): Promise<void> {
  const run = registry[RUN];
  if (!run || --run.users > 0) return;
  delete registry[RUN];
  const { moto, removeCdkOut, tempRoot } = await run.ready;
  moto?.started?.kill();
  removeCdkOut();
  rmSync(tempRoot, { recursive: true, force: true });
}
