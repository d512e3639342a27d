/**
 * The launcher's relaunch (bin/launch.mjs): `varve write` / `delete` run in a child node process
 * with the memory settings, and the pair behaves as one command: stdin, stdout, the exit code,
 * a signal, and a launcher killed outright (the child dies with it, committing nothing).
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ESM script of bin/, without types
import { CHILD_NODE_FLAGS, WRITE_NODE_FLAGS, commandOf, relaunchArgs } from '../../bin/launch.mjs';
import { runVarve, startVarve, until, varveProcess } from '../helpers/cli-process.js';

const hasProc = existsSync('/proc/self/task');

/** The pids of `pid`'s children (Linux /proc). */
function children(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

const alive = (pid: number) =>
  existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));

describe('relaunchArgs', () => {
  it('relaunches write, delete and count only, after the global options, once, and only without node flags of the user', () => {
    expect(commandOf(['--warehouse', 'write', 'read', 'db.t'])).toBe('read');
    expect(commandOf(['--warehouse=/w', 'write', 'db.t'])).toBe('write');
    const env = { PATH: '/bin' };
    const r = relaunchArgs(['--warehouse', '/w', 'write', 'db.t', 'in.jsonl'], [], env, 4321);
    expect(r.args).toEqual(['--warehouse', '/w', 'write', 'db.t', 'in.jsonl']);
    expect(r.nodeFlags).toEqual([...CHILD_NODE_FLAGS, ...WRITE_NODE_FLAGS]);
    expect(r.env).toMatchObject({ PATH: '/bin', MALLOC_ARENA_MAX: '2', VARVE_LAUNCHED: '4321' });
    expect(relaunchArgs(['delete', 'db.t'], [], env)?.nodeFlags).toEqual([...CHILD_NODE_FLAGS, ...WRITE_NODE_FLAGS]);
    expect(relaunchArgs(['--warehouse', '/w', 'count', 'db.t'], [], env)?.nodeFlags).toEqual(CHILD_NODE_FLAGS);
    expect(relaunchArgs(['write', 'db.t'], [], { MALLOC_ARENA_MAX: '8' }).env.MALLOC_ARENA_MAX).toBe('8');
    for (const args of [['read', 'db.t'], ['tail', 'db.t'], ['create', 'write'], [], ['--help']])
      expect(relaunchArgs(args, [], env)).toBeNull();
    expect(relaunchArgs(['write', 'db.t'], ['--inspect'], env)).toBeNull();
    expect(relaunchArgs(['write', 'db.t'], [], { VARVE_LAUNCHED: '1' })).toBeNull();
    expect(relaunchArgs(['write', 'db.t'], [], { VARVE_NO_RELAUNCH: '1' })).toBeNull();
  });
});

describe.skipIf(!hasProc)('varve write through the relaunch (separate OS processes)', () => {
  let wh: string;
  beforeEach(async () => {
    wh = join(mkdtempSync(join(tmpdir(), 'varve-launcher-')), 'wh');
    expect(
      (await runVarve(wh, ['create', 'db.t', '--schema', 'id BIGINT NOT NULL, v STRING', '--primary-key', 'id'])).code,
    ).toBe(0);
  });

  /** The launcher's child, once it runs node with the relaunch's flags. */
  async function childOf(w: ReturnType<typeof startVarve>): Promise<number> {
    let child = 0;
    const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    await until(
      () => (child = children(w.child.pid!)[0] ?? 0) > 0 && cmdline(child).includes(CHILD_NODE_FLAGS[0]),
      'the launcher started its child with the flags',
      w,
    );
    expect(cmdline(child)).toEqual(
      expect.arrayContaining([...CHILD_NODE_FLAGS, ...WRITE_NODE_FLAGS, 'write', 'db.t', '-']),
    );
    return child;
  }

  it('reads stdin and prints in the child, which runs with MALLOC_ARENA_MAX; exit codes pass through', async () => {
    const w = startVarve(wh, ['write', 'db.t', '-']);
    const child = await childOf(w);
    expect(readFileSync(`/proc/${child}/environ`, 'utf8').split('\0')).toContain('MALLOC_ARENA_MAX=2');
    w.child.stdin!.end('{"id": 1, "v": "a"}\n{"id": 2, "v": "b"}\n');
    expect(await w.exited).toBe(0);
    expect(w.out()).toMatch(/wrote 2 rows/);
    // A rejected record: the exit code and message are the command's, as in one process.
    const input = join(wh, '..', 'bad.jsonl');
    writeFileSync(input, '{"id": 3}\n{"id": "x"}\n');
    const relaunched = varveProcess(wh, ['write', 'db.t', input]);
    const inProcess = await runVarve(wh, ['write', 'db.t', input]);
    expect(relaunched.code).not.toBe(0);
    expect(relaunched.code).toBe(inProcess.code);
    expect(relaunched.err).toMatch(/line 2/);
    expect((await runVarve(wh, ['count', 'db.t'])).out.trim()).toBe('2');
    // count is relaunched too: the same output and exit codes as in one process.
    expect(varveProcess(wh, ['count', 'db.t', '--where', 'id > 1'])).toMatchObject({ code: 0, out: '1\n' });
    const missing = varveProcess(wh, ['count', 'db.none']);
    expect(missing.code).not.toBe(0);
    expect(missing.code).toBe((await runVarve(wh, ['count', 'db.none'])).code);
    expect(missing.err).toMatch(/db\.none/);
  });

  it('a SIGTERM to the launcher ends the child and the launcher dies of it; a SIGKILL takes the child with it, committing nothing', async () => {
    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      const w = startVarve(wh, ['write', 'db.t', '-']);
      const child = await childOf(w);
      // Rows the child has read but not committed: the stream stays open.
      w.child.stdin!.write('{"id": 10, "v": "x"}\n');
      const closed = new Promise<NodeJS.Signals | null>((resolve) => w.child.on('exit', (_code, s) => resolve(s)));
      w.child.kill(signal);
      expect(await closed).toBe(signal);
      await until(() => !alive(child), `the child ended after the launcher's ${signal}`);
      w.child.stdin!.destroy();
    }
    expect((await runVarve(wh, ['count', 'db.t'])).out.trim()).toBe('0');
  });
});
