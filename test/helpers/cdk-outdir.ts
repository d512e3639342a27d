/**
 * Output folders for the CDK Apps the tests synthesise. An App made without `outdir` synthesises
 * into a new `/tmp/cdk.out*` folder that nobody removes (thousands per run of the suite); each
 * test App gets a folder under one per-run root instead: test/global-setup.ts makes the root
 * (VARVE_TEST_CDK_OUT, inherited by the test processes) and removes it when the run ends. A test
 * process started without the global setup makes its own root and removes it when it exits.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Environment variable naming the per-run root (set by test/global-setup.ts). */
const CDK_OUT_ROOT_ENV = 'VARVE_TEST_CDK_OUT';

let ownRoot: string | undefined;

function root(): string {
  const shared = process.env[CDK_OUT_ROOT_ENV];
  if (shared) return shared;
  if (ownRoot === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'varve-cdk-out-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    ownRoot = dir;
  }
  return ownRoot;
}

/** A new, empty output folder for one test App. */
export function cdkOutdir(): string {
  return mkdtempSync(join(root(), 'app-'));
}

/** Makes the per-run root (global setup); returns a function that removes it (global teardown). */
export function makeCdkOutRoot(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'varve-cdk-out-'));
  process.env[CDK_OUT_ROOT_ENV] = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}
