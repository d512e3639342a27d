import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, readdir, rm, stat, truncate, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidKeyError, ObjectNotFoundError } from '../../lib/errors.js';
import { contentEtag } from '../../lib/store/etag.js';
import { LocalStore } from '../../lib/store/local-store.js';
import { fromUtf8, listAll, utf8 } from '../../lib/store/object-store.js';
import { openStore } from '../../lib/store/open-store.js';
import { openFilesUnder } from '../helpers/open-files.js';
import { storeContract } from './store-contract.js';

const scratch = mkdtempSync(join(tmpdir(), 'varve-local-store-'));
let folders = 0;
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A fresh folder path under the scratch folder (not created: the store creates it on write). */
function freshRoot(name = 'wh'): string {
  return join(scratch, `${name}-${++folders}`);
}

/** Every file name under `dir`, recursively, dot-files included. */
async function allFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

storeContract('LocalStore', () => new LocalStore(freshRoot()));

const worker = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'local-race-worker.ts');

/** Spawns `n` worker processes, waits until all are ready, starts them together, returns their outputs. */
async function raceProcesses(n: number, args: (i: number) => string[], whileRunning?: () => Promise<void>) {
  const children = Array.from({ length: n }, (_, i) =>
    spawn(process.execPath, ['--import', 'tsx', worker, ...args(i)], { stdio: ['pipe', 'pipe', 'pipe'] }),
  );
  const outputs = children.map(
    (child, i) =>
      new Promise<string[]>((resolve, reject) => {
        let out = '';
        let err = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr.on('data', (d: Buffer) => (err += d.toString()));
        child.on('error', reject);
        child.on('close', (code) =>
          code === 0 ? resolve(out.trim().split('\n')) : reject(new Error(`worker ${i} exited with ${code}: ${err}`)),
        );
      }),
  );
  await Promise.all(
    children.map((child) => new Promise<void>((resolve) => child.stdout.once('data', () => resolve()))),
  );
  let running = true;
  const done = Promise.all(outputs).finally(() => (running = false));
  for (const child of children) child.stdin.end('go\n');
  const reader = (async () => {
    while (running && whileRunning) await whileRunning();
  })();
  const lines = await done;
  await reader;
  return lines.map((l) => JSON.parse(l[l.length - 1]));
}

describe('LocalStore across processes', () => {
  it('gives each of 50 keys exactly one winner among 8 processes, never a partial file', async () => {
    const root = freshRoot('race');
    const store = new LocalStore(root);
    const whole = new Set<string>();

    const results: Array<{ won: string[] }> = await raceProcesses(
      8,
      (i) => ['absent', root, `w${i}`, '50'],
      async () => {
        // A reader racing the writers reads each object as soon as it appears, when a torn write
        // would show: every object it sees must be whole.
        for (const o of await listAll(store, 'race/')) {
          if (whole.has(o.key)) continue;
          const doc = JSON.parse(fromUtf8((await store.get(o.key)).body));
          expect(doc.key).toBe(o.key);
          whole.add(o.key);
        }
      },
    );

    const winners = new Map<string, string[]>();
    results.forEach((r, i) => r.won.forEach((key) => winners.set(key, [...(winners.get(key) ?? []), `w${i}`])));
    expect(winners.size).toBe(50);
    for (const [key, who] of winners) {
      expect(who, key).toHaveLength(1);
      const doc = JSON.parse(fromUtf8((await store.get(key)).body));
      expect(doc.worker).toBe(who[0]);
      expect(doc.pad).toBe(`${who[0]}:`.repeat(64 * 1024));
    }
    const files = await allFiles(root);
    expect(files.filter((f) => f.endsWith('.tmp') || f.endsWith('.lock'))).toEqual([]);
    expect(files).toHaveLength(50);
    console.log(`cross-process putIfAbsent: 8 processes x 50 keys, ${whole.size} keys read as they appeared`);
  }, 300_000); // separate tsx processes: a slow start on a loaded machine is not a failure

  it('loses no compare-and-swap update between 4 processes', async () => {
    const root = freshRoot('cas');
    const store = new LocalStore(root);
    await store.put('cas/counter', utf8('0'));

    const results: Array<{ increments: number; attempts: number }> = await raceProcesses(4, (i) => [
      'cas',
      root,
      `w${i}`,
      '25',
    ]);

    expect(fromUtf8((await store.get('cas/counter')).body)).toBe('100');
    expect((await allFiles(root)).map((f) => f.slice(root.length))).toEqual(['/cas/counter']);
    const attempts = results.reduce((n, r) => n + r.attempts, 0);
    console.log(`cross-process putIfMatch: 100 increments by 4 processes in ${attempts} attempts`);
  }, 300_000);
});

describe('LocalStore on disk', () => {
  it('works under a root folder whose path has spaces and unicode, and reopens from its uri', async () => {
    const root = freshRoot('wärehouse 名前 with spaces %41');
    const store = new LocalStore(root);

    await store.put('db.db/t/snapshot/snapshot-1', utf8('{}'));

    expect(store.uri).toBe(`file://${root.replaceAll('%', '%25')}`);
    expect((await stat(join(root, 'db.db', 't', 'snapshot', 'snapshot-1'))).isFile()).toBe(true);
    const reopened = openStore(store.uri);
    expect((await listAll(reopened, '')).map((o) => o.key)).toEqual(['db.db/t/snapshot/snapshot-1']);
    expect(reopened.uri).toBe(store.uri);
  });

  it('skips temp and lock files when listing', async () => {
    const root = freshRoot();
    const store = new LocalStore(root);
    await store.put('snap/snapshot-1', utf8('1'));
    await writeFile(join(root, 'snap', '.snapshot-2.1234.tmp'), 'partial');
    await writeFile(join(root, 'snap', '.snapshot-1.lock'), '1 then');

    const listed = await listAll(store, '');

    expect(listed.map((o) => o.key)).toEqual(['snap/snapshot-1']);
  });

  it('gives an etag that is the content hash and follows overwrites', async () => {
    const store = new LocalStore(freshRoot());
    await store.put('k', utf8('one'));
    const first = await store.head('k');

    await store.put('k', utf8('two!'));
    const second = await store.head('k');

    expect(first?.etag).toBe(contentEtag(utf8('one')));
    expect(second).toMatchObject({ etag: contentEtag(utf8('two!')), size: 4 });
  });

  it('waits for a held key lock and proceeds once it is released', async () => {
    const root = freshRoot();
    const store = new LocalStore(root);
    const { etag } = await store.put('ptr', utf8('v1'));
    const lockFile = join(root, '.ptr.lock');
    await writeFile(lockFile, 'another process');

    let settled = false;
    const swap = store.putIfMatch('ptr', utf8('v2'), etag).finally(() => (settled = true));
    await new Promise((r) => setTimeout(r, 150));
    expect(settled).toBe(false);
    await rm(lockFile);

    expect(await swap).toBeDefined();
    expect(fromUtf8((await store.get('ptr')).body)).toBe('v2');
  });

  it('breaks a stale lock left by a dead process', async () => {
    const root = freshRoot();
    const store = new LocalStore(root);
    const { etag } = await store.put('ptr', utf8('v1'));
    const lockFile = join(root, '.ptr.lock');
    await writeFile(lockFile, 'a process that died');
    const minuteAgo = new Date(Date.now() - 60_000);
    await utimes(lockFile, minuteAgo, minuteAgo);

    const swapped = await store.putIfMatch('ptr', utf8('v2'), etag);

    expect(swapped).toBeDefined();
    expect(await allFiles(root)).toEqual([join(root, 'ptr')]);
  });

  it('refuses a key that is both an object and a folder of other keys', async () => {
    const store = new LocalStore(freshRoot());
    await store.put('a', utf8('object'));
    await store.put('b/c', utf8('nested'));

    await expect(store.put('a/b', utf8('x'))).rejects.toBeInstanceOf(InvalidKeyError);
    await expect(store.putIfAbsent('b', utf8('x'))).rejects.toBeInstanceOf(InvalidKeyError);
    await expect(store.put('b', utf8('x'))).rejects.toBeInstanceOf(InvalidKeyError);
    expect(await store.head('b')).toBeUndefined();
  });

  it('lists nothing, and reads nothing, when the root folder does not exist yet', async () => {
    const store = new LocalStore(freshRoot());

    expect(await listAll(store, '')).toEqual([]);
    await store.delete('never/written');
    await expect(store.putIfMatch('never/written', utf8('x'), '"e"')).rejects.toMatchObject({ kind: 'not-found' });
  });

  it('treats an empty folder as no object', async () => {
    const root = freshRoot();
    await mkdir(join(root, 'empty'), { recursive: true });
    const store = new LocalStore(root);

    expect(await listAll(store, 'empty/')).toEqual([]);
    expect(await store.head('empty')).toBeUndefined();
  });
});

describe('LocalStore.openRanges', () => {
  it('reads the version it opened whole when the key is replaced or deleted meanwhile, then closes its file', async () => {
    const root = freshRoot();
    const store = new LocalStore(root);
    const old = Uint8Array.from({ length: 4096 }, (_, i) => i % 251);
    await store.put('v/k', old);

    const reader = await store.openRanges('v/k');
    expect(openFilesUnder(root)).toEqual([join(root, 'v', 'k')]);
    expect(await reader.read(0, 100)).toEqual(old.slice(0, 100));
    await store.put('v/k', utf8('a new, shorter version'));
    // The old inode: the rest of the old bytes, at the old size, never a mix.
    expect(reader.size).toBe(4096);
    expect(Buffer.from(await reader.read(100, 4096)).equals(old.subarray(100))).toBe(true);
    expect(fromUtf8(await store.getRange('v/k', 0, 100))).toBe('a new, shorter version');
    await store.delete('v/k');
    expect(await reader.read(4000, 5000)).toEqual(old.slice(4000));
    expect(openFilesUnder(root)).toEqual([`${join(root, 'v', 'k')} (deleted)`]);

    await reader.close();
    expect(openFilesUnder(root)).toEqual([]);
    await expect(reader.read(0, 1)).rejects.toThrow(/the range reader of v\/k is closed/);
  });

  it('answers shorter, with only the bytes there, when the file was cut in place by someone else', async () => {
    const root = freshRoot();
    const store = new LocalStore(root);
    await store.put(
      'cut',
      Uint8Array.from({ length: 1000 }, (_, i) => i & 0xff),
    );

    const reader = await store.openRanges('cut');
    await truncate(join(root, 'cut'), 300);
    const got = await reader.read(200, 1000);
    await reader.close();

    expect(got).toEqual(Uint8Array.from({ length: 100 }, (_, i) => (200 + i) & 0xff));
    expect(got.buffer.byteLength).toBe(100);
  });

  it('reports a missing key and a folder as no object, holding no file after', async () => {
    const root = freshRoot();
    const store = new LocalStore(root);
    await store.put('f/inner/x', utf8('x'));

    await expect(store.openRanges('f/missing')).rejects.toBeInstanceOf(ObjectNotFoundError);
    await expect(store.openRanges('f/inner')).rejects.toBeInstanceOf(ObjectNotFoundError);
    await expect(store.getRange('f/inner', 0, 1)).rejects.toBeInstanceOf(ObjectNotFoundError);
    expect(openFilesUnder(root)).toEqual([]);
  });

  it('closes after the reads in flight, which finish with their bytes', async () => {
    const root = freshRoot();
    const store = new LocalStore(root);
    const body = Uint8Array.from({ length: 1 << 20 }, (_, i) => (i * 7) & 0xff);
    await store.put('big', body);

    const reader = await store.openRanges('big');
    const reads = Array.from({ length: 8 }, (_, i) => reader.read(i << 17, (i + 1) << 17));
    await reader.close();
    const got = await Promise.all(reads);
    got.forEach((b, i) => expect(Buffer.from(b).equals(body.subarray(i << 17, (i + 1) << 17)), `read ${i}`).toBe(true));
    expect(openFilesUnder(root)).toEqual([]);
  });
});

describe('LocalStore.watch', () => {
  it('notifies changes under a folder, also one created after the watch began, and stops when asked', async () => {
    // Prepare
    const store = new LocalStore(mkdtempSync(join(tmpdir(), 'varve-watch-')));
    // Waits for the n-th notification itself, however long a busy machine takes (the test's
    // timeout is the backstop), instead of polling against a deadline.
    let calls = 0;
    let wanted: { n: number; reached: () => void } | undefined;
    const waitFor = (n: number): Promise<void> =>
      calls >= n ? Promise.resolve() : new Promise((reached) => (wanted = { n, reached }));
    // Act: the folder does not exist yet (a table before its first commit).
    const stop = store.watch('t/snapshot/', () => {
      calls++;
      if (wanted && calls >= wanted.n) wanted.reached();
    });
    await store.put('t/snapshot/snapshot-1', utf8('1'));
    await waitFor(1);
    const before = calls;
    await store.putIfAbsent('t/snapshot/snapshot-2', utf8('2'));
    await waitFor(before + 1);
    // Assess: after stop, nothing more.
    stop();
    const stopped = calls;
    await store.put('t/snapshot/snapshot-3', utf8('3'));
    await new Promise((r) => setTimeout(r, 100));
    expect(calls).toBe(stopped);
  });
});
