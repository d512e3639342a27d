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

let moto: Moto | undefined;
let removeCdkOut: (() => void) | undefined;
let tempRoot: string | undefined;

export async function setup(): Promise<void> {
  // Every temp folder of the run (the tests' warehouses, inputs, the processes they spawn) goes
  // under one root removed at the end: the workers and their children inherit TMPDIR, which
  // os.tmpdir() reads, so a test that keeps its folder for a failure's post-mortem leaves nothing
  // behind after the run.
  tempRoot = mkdtempSync(join(tmpdir(), 'varve-test-run-'));
  process.env.TMPDIR = tempRoot;
  // Without moto the AWS tests skip themselves (or fail under VARVE_REQUIRE_MOTO=1).
  moto = await ensureMoto();
  // The CDK test Apps synthesise under one folder per run, removed at the end (helpers/cdk-outdir.ts).
  removeCdkOut = makeCdkOutRoot();
}

export async function teardown(): Promise<void> {
  moto?.started?.kill();
  removeCdkOut?.();
  if (tempRoot) rmSync(tempRoot, { recursive: true, force: true });
}
