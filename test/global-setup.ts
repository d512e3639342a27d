/**
 * Starts a moto server for the AWS tests when none is configured, so `npm test` works the same on
 * a laptop and in CI (where .ci/run starts moto and sets AWS_ENDPOINT_URL itself).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';

let moto: ChildProcess | undefined;

function findMotoPython(): string | undefined {
  const candidates = ['python3', join(homedir(), '.pyenv/shims/python3')];
  const versions = join(homedir(), '.pyenv/versions');
  if (existsSync(versions)) for (const v of readdirSync(versions)) candidates.push(join(versions, v, 'bin/python3'));
  for (const p of candidates) {
    const r = spawnSync(p, ['-c', 'import moto.server'], { stdio: 'ignore' });
    if (r.status === 0) return p;
  }
  return undefined;
}

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

export async function setup(): Promise<void> {
  if (process.env.AWS_ENDPOINT_URL) return;
  const py = findMotoPython();
  if (!py) return; // AWS tests skip themselves (or fail under VARVE_REQUIRE_MOTO=1)
  const port = await freePort();
  moto = spawn(py, ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 150; i++) {
    try {
      const r = await fetch(`${url}/moto-api/`);
      if (r.ok) break;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  Object.assign(process.env, {
    AWS_ENDPOINT_URL: url,
    AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'test',
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'test',
  });
}

export async function teardown(): Promise<void> {
  moto?.kill();
}
