/**
 * `npm run e2e:aws`: a scripted day of traffic, with faults, through the synthesised bundles of
 * e2e/app.ts running on the emulator (Lambda containers, SQS event source mappings, EventBridge
 * rules and schedules) over moto, with every AWS call audited against the synthesised IAM
 * policies. Ends with one line:
 *
 *   e2e: changes delivered X/X, duplicates D, order violations 0, lost 0, stale wins 0, IAM denials 0,
 *   dlq N; injected S3 409 A, S3 503 B, Lambda throttles C
 *
 * and exits non-zero on a lost change, an order violation, a stale win (a key of the table not
 * at the version sent last), an IAM denial or a fault of the scripted day that did not happen.
 *
 * Environment: AWS_ENDPOINT_URL (moto; started here when unset, reused when set),
 * VARVE_E2E_SKIP_SYNTH=1 to reuse cdk.out.e2e, VARVE_E2E_ROUNDS (default 10 rounds, one fault each;
 * 10 are needed for every fault), VARVE_E2E_SEED (the service faults' draws; random by default,
 * printed), VARVE_E2E_TIME_SCALE (how much faster the queues' visibility
 * timeouts pass, default 120), VARVE_E2E_SETTLE_SECONDS (how long a round may take to settle,
 * default 60).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureMoto } from './aws/moto.js';
import { E2E_STACK_NAME } from './names.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ASSEMBLY = path.join(ROOT, 'cdk.out.e2e');
const log = (...a: unknown[]) => console.log('e2e:', ...a);

function synth(): void {
  if (process.env.VARVE_E2E_SKIP_SYNTH === '1' && existsSync(path.join(ASSEMBLY, `${E2E_STACK_NAME}.template.json`)))
    return;
  log('synthesising e2e/app.ts into cdk.out.e2e (offline, local esbuild)');
  const r = spawnSync('npx', ['cdk', 'synth', '--app', 'npx tsx e2e/app.ts', '-o', ASSEMBLY, '--no-notices', '-q'], {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, CDK_DISABLE_CLI_TELEMETRY: 'true', CDK_DISABLE_VERSION_CHECK: '1' },
  });
  if (r.status !== 0) throw new Error('cdk synth of e2e/app.ts failed');
}

/**
 * The AWS SDK prints 8 lines on every process under Node < 22: this run and each emulated Lambda
 * container (which sets the same switch, e2e/emulator/lambda.ts). Said once here, in one line, as
 * varve's CLI does (lib/cli/entry.ts).
 */
function quietenSdkNodeWarning(): void {
  const major = Number(process.versions.node.split('.')[0]);
  if (major >= 22 || process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED !== undefined) return;
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  log(
    `note: Node ${process.version}; the AWS SDK's Node >= 22 warning is off in this run and its Lambda containers (Lambda runs nodejs22.x)`,
  );
}

async function main(): Promise<number> {
  quietenSdkNodeWarning();
  const moto = await ensureMoto();
  if (!moto)
    throw new Error("moto not found: pip install 'moto[server]>=5.2,<5.3', or set AWS_ENDPOINT_URL to a running moto");
  log(moto.started ? `started moto on ${moto.url}` : `using moto at ${moto.url}`);
  try {
    synth();
    // Imported after the environment is set: the emulator's clients read it.
    const { runDay } = await import('./day.js');
    const stateDir = mkdtempSync(path.join(tmpdir(), 'varve-e2e-'));
    try {
      const r = await runDay({
        assembly: ASSEMBLY,
        stateDir,
        rounds: process.env.VARVE_E2E_ROUNDS ? Number(process.env.VARVE_E2E_ROUNDS) : undefined,
        seed: process.env.VARVE_E2E_SEED ? Number(process.env.VARVE_E2E_SEED) : Math.floor(Math.random() * 2 ** 31),
        timeScale: Number(process.env.VARVE_E2E_TIME_SCALE ?? 120),
        settleMs: Number(process.env.VARVE_E2E_SETTLE_SECONDS ?? 60) * 1000,
      });
      console.log(r.line);
      return r.ok ? 0 : 1;
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  } finally {
    moto.started?.kill();
  }
}

main().then(
  (code) => process.exit(code),
  (e: Error) => {
    console.error(e);
    console.log('e2e: FAILED before its closing line:', e.message);
    process.exit(1);
  },
);
