/**
 * The one way varve's AWS tests and `npm run e2e:aws` get a moto server: reuse the one
 * AWS_ENDPOINT_URL names (.ci/run starts one on a fixed port), or start one on a free loopback
 * port and set AWS_ENDPOINT_URL (and test credentials) for this process and its children.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** A python3 that can `import moto.server` (moto lives in pyenv's Python on the CI image), or undefined. */
export function findMotoPython(): string | undefined {
  const candidates = ['python3', join(homedir(), '.pyenv/shims/python3')];
  const versions = join(homedir(), '.pyenv/versions');
  if (existsSync(versions)) for (const v of readdirSync(versions)) candidates.push(join(versions, v, 'bin/python3'));
  return candidates.find((p) => spawnSync(p, ['-c', 'import moto.server'], { stdio: 'ignore' }).status === 0);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** A moto server this process uses: `started` is the child to stop at the end (none when reused). */
export interface Moto {
  url: string;
  started?: ChildProcess;
}

/**
 * Reuses AWS_ENDPOINT_URL or starts moto (waiting until it answers). Returns undefined when no
 * endpoint is configured and moto is not installed; the caller decides whether that is fatal.
 */
export async function ensureMoto(): Promise<Moto | undefined> {
  Object.assign(process.env, {
    AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
    AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'test',
    AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'test',
  });
  if (process.env.AWS_ENDPOINT_URL) return { url: process.env.AWS_ENDPOINT_URL };
  const py = findMotoPython();
  if (!py) return undefined;
  const port = await freePort();
  const started = spawn(py, ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  let up = false;
  for (let i = 0; i < 300 && !up; i++) {
    try {
      up = (await fetch(`${url}/moto-api/`)).ok;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  if (!up) {
    started.kill();
    throw new Error(`moto started by ${py} did not answer on ${url} within 30 s`);
  }
  process.env.AWS_ENDPOINT_URL = url;
  return { url, started };
}
