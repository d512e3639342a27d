/**
 * `npm run e2e:aws`: a scripted day of traffic, with faults, through the synthesised bundles of
 * e2e/app.ts running on the emulator (Lambda containers, SQS event source mappings, EventBridge
 * rules and schedules) over moto, with every AWS call audited against the synthesised IAM
 * policies. Ends with one line:
 *
 *   e2e: changes delivered X/X, duplicates D, order violations 0, lost 0, IAM denials 0, dlq N
 *
 * and exits non-zero on a lost change, an order violation or an IAM denial.
 *
 * Environment: AWS_ENDPOINT_URL (moto; started here when unset), VARVE_E2E_SKIP_SYNTH=1 to reuse
 * cdk.out.e2e, VARVE_E2E_ROUNDS (default 9 rounds, one fault each).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { E2E_STACK_NAME } from './names.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ASSEMBLY = path.join(ROOT, 'cdk.out.e2e');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (...a: unknown[]) => console.log('e2e:', ...a);

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** Starts moto on loopback unless AWS_ENDPOINT_URL already names one. */
async function ensureMoto(): Promise<ChildProcess | undefined> {
  Object.assign(process.env, { AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test' });
  if (process.env.AWS_ENDPOINT_URL) return undefined;
  const candidates = ['python3', path.join(homedir(), '.pyenv/shims/python3')];
  const versions = path.join(homedir(), '.pyenv/versions');
  if (existsSync(versions)) for (const v of readdirSync(versions)) candidates.push(path.join(versions, v, 'bin/python3'));
  const py = candidates.find((p) => spawnSync(p, ['-c', 'import moto.server'], { stdio: 'ignore' }).status === 0);
  if (!py) throw new Error("moto not found: pip install 'moto[server]>=5.2,<5.3', or set AWS_ENDPOINT_URL");
  const port = await freePort();
  const moto = spawn(py, ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 150; i++) {
    try {
      if ((await fetch(`${url}/moto-api/`)).ok) break;
    } catch {
      await sleep(100);
    }
  }
  process.env.AWS_ENDPOINT_URL = url;
  return moto;
}

function synth(): void {
  if (process.env.VARVE_E2E_SKIP_SYNTH === '1' && existsSync(path.join(ASSEMBLY, `${E2E_STACK_NAME}.template.json`))) return;
  log('synthesising e2e/app.ts into cdk.out.e2e (offline, local esbuild)');
  const r = spawnSync('npx', ['cdk', 'synth', '--app', 'npx tsx e2e/app.ts', '-o', ASSEMBLY, '--no-notices', '-q'], {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, CDK_DISABLE_CLI_TELEMETRY: 'true' },
  });
  if (r.status !== 0) throw new Error('cdk synth of e2e/app.ts failed');
}

async function main(): Promise<number> {
  const moto = await ensureMoto();
  try {
    synth();
    // Imported after the environment is set: the emulator's clients read it.
    const { runDay } = await import('./day.js');
    const stateDir = mkdtempSync(path.join(tmpdir(), 'varve-e2e-'));
    try {
      const r = await runDay({ assembly: ASSEMBLY, stateDir, rounds: Number(process.env.VARVE_E2E_ROUNDS ?? 9) });
      console.log(r.line);
      return r.ok ? 0 : 1;
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  } finally {
    moto?.kill();
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
