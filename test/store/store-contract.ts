/**
 * The ObjectStore contract, as one suite every store runs (memory, local folder, S3 on moto): what
 * the layers above may rely on, whatever store they talk to.
 */
import { describe, expect, it } from 'vitest';
import { sleep } from '../../lib/store/backoff.js';
import { InvalidArgumentError, InvalidKeyError, ObjectNotFoundError } from '../../lib/errors.js';
import { fromUtf8, listAll, openRanges, utf8, type ObjectStore } from '../../lib/store/object-store.js';

/** Deterministic pseudo-random bytes (xorshift), so a failing comparison is reproducible. */
function bytes(n: number, seed = 1): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed | 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** Runs `fn(i)` for i in [0, n) with at most `concurrency` calls in flight. */
async function runPool(n: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(n, concurrency) }, worker));
}

const BAD_KEYS = ['../x', 'a//b', '/abs', 'a/../b', '', 'a/', './a', 'a\\b', 'a\0b', 'd/.x.tmp', '.y.lock'];

/** Keys whose expected order differs between UTF-16 and code-point (S3) order, and around '/'. */
const ORDERED_KEYS = [
  'a-b',
  'a/b/c',
  'a/b/d/e',
  'a/c',
  'a0',
  'ab',
  'snapshot/LATEST',
  'snapshot/snapshot-1',
  'snapshot/snapshot-10',
  'snapshot/snapshot-2',
  'z/é',
  'z/～', // U+FF5E: after é, before the astral character in code-point order
  'z/😀', // U+1F600: its UTF-16 surrogates (0xD83D…) would sort it before U+FF5E
];

/** What a store under test is known not to guarantee. */
export interface ContractOptions {
  /**
   * Extra winners tolerated in the concurrent races. 0 (the default) demands linearizable
   * conditional writes. moto checks If-Match / If-None-Match without a lock (reference/
   * aws-semantics.md §5.1) and was seen here to let two If-Match puts with the same etag both
   * succeed in about one run in five of the counter race; real S3 does not. The deterministic tests
   * above cover the store's own 412/404 handling either way.
   */
  conditionalRaceSlack?: number;
}

/** Registers the contract suite for one store; `makeStore` gives a fresh, empty store per test. */
export function storeContract(
  name: string,
  makeStore: () => ObjectStore | Promise<ObjectStore>,
  opts: ContractOptions = {},
): void {
  const slack = opts.conditionalRaceSlack ?? 0;
  describe(`ObjectStore contract: ${name}`, () => {
    it('reports a missing object with a typed error', async () => {
      const store = await makeStore();

      const got = store.get('missing/object');

      await expect(got).rejects.toBeInstanceOf(ObjectNotFoundError);
      await expect(got).rejects.toMatchObject({ key: 'missing/object' });
      await expect(store.getRange('missing/object', 0, 4)).rejects.toBeInstanceOf(ObjectNotFoundError);
      await expect(store.getRange('missing/object', 0, 0)).rejects.toBeInstanceOf(ObjectNotFoundError);
      expect(await store.head('missing/object')).toBeUndefined();
    });

    it('round-trips binary, empty and 5 MB bodies with their etags', async () => {
      const store = await makeStore();
      const binary = Uint8Array.from({ length: 256 }, (_, i) => i);
      const big = bytes(5 * 1024 * 1024, 7);
      const before = Date.now();

      const putBinary = await store.put('rt/binary', binary);
      const putEmpty = await store.put('rt/empty', new Uint8Array(0));
      const putBig = await store.put('rt/big', big);
      binary.fill(0); // the store must have kept its own copy

      const gotBinary = await store.get('rt/binary');
      expect(gotBinary.body).toEqual(Uint8Array.from({ length: 256 }, (_, i) => i));
      expect(gotBinary.etag).toBe(putBinary.etag);
      expect(Math.abs(gotBinary.lastModified - before)).toBeLessThan(60_000);
      const gotEmpty = await store.get('rt/empty');
      expect(gotEmpty.body.length).toBe(0);
      expect(gotEmpty.etag).toBe(putEmpty.etag);
      const gotBig = await store.get('rt/big');
      expect(gotBig.body.length).toBe(big.length);
      expect(Buffer.from(gotBig.body).equals(Buffer.from(big))).toBe(true);
      expect(gotBig.etag).toBe(putBig.etag);
    });

    it('overwrites on put and gives the new version a new etag', async () => {
      const store = await makeStore();
      const first = await store.put('ow/k', utf8('one'));

      const second = await store.put('ow/k', utf8('two'));

      expect(second.etag).not.toBe(first.etag);
      const got = await store.get('ow/k');
      expect(fromUtf8(got.body)).toBe('two');
      expect(got.etag).toBe(second.etag);
    });

    it('reads byte ranges [start, end), clamped to the object', async () => {
      const store = await makeStore();
      const body = Uint8Array.from({ length: 100 }, (_, i) => i);
      await store.put('range/k', body);

      expect(await store.getRange('range/k', 0, 10)).toEqual(body.slice(0, 10));
      expect(await store.getRange('range/k', 90, 100)).toEqual(body.slice(90, 100));
      expect(await store.getRange('range/k', 95, 200)).toEqual(body.slice(95, 100));
      expect((await store.getRange('range/k', 100, 110)).length).toBe(0);
      expect((await store.getRange('range/k', 10, 10)).length).toBe(0);
      await expect(store.getRange('range/k', 5, 2)).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(store.getRange('range/k', -1, 2)).rejects.toBeInstanceOf(InvalidArgumentError);
    });

    it('reads many ranges of an object through one openRanges reader, as getRange does', async () => {
      const store = await makeStore();
      const body = bytes(70_000, 3);
      await store.put('ranges/k', body);

      for (const size of [undefined, body.length]) {
        const reader = await openRanges(store, 'ranges/k', size);
        expect(reader.size).toBe(body.length);
        for (const [a, b] of [
          [0, 10],
          [69_990, 70_000],
          [65_000, 90_000],
          [70_000, 70_010],
          [5, 5],
          [1000, 40_000],
        ]) {
          // Buffer comparison: toEqual walks 70,000 elements one by one.
          const got = Buffer.from(await reader.read(a, b));
          expect(got.equals(body.subarray(a, b)), `[${a}, ${b})`).toBe(true);
          expect(got.equals(await store.getRange('ranges/k', a, b)), `[${a}, ${b})`).toBe(true);
        }
        await expect(reader.read(5, 2)).rejects.toBeInstanceOf(InvalidArgumentError);
        await reader.close();
        await reader.close(); // twice is fine
        await expect(reader.read(0, 1)).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(reader.read(0, 1)).rejects.toThrow(/closed; open the object again/);
      }
      await expect(openRanges(store, 'ranges/missing')).rejects.toBeInstanceOf(ObjectNotFoundError);
      await expect(openRanges(store, '../x')).rejects.toBeInstanceOf(InvalidKeyError);
    });

    it('heads an object: size, etag and mtime without the body', async () => {
      const store = await makeStore();
      const { etag } = await store.put('head/k', bytes(1234));

      const info = await store.head('head/k');

      expect(info).toMatchObject({ key: 'head/k', size: 1234, etag });
      expect(Math.abs(info!.lastModified - Date.now())).toBeLessThan(60_000);
    });

    it('creates with putIfAbsent exactly once; later attempts change nothing', async () => {
      const store = await makeStore();

      const won = await store.putIfAbsent('pia/k', utf8('first'));
      const lost = await store.putIfAbsent('pia/k', utf8('second'));

      expect(won?.etag).toEqual(expect.any(String));
      expect(lost).toBeUndefined();
      const got = await store.get('pia/k');
      expect(fromUtf8(got.body)).toBe('first');
      expect(got.etag).toBe(won!.etag);
    });

    it('swaps with putIfMatch only while the etag is current', async () => {
      const store = await makeStore();
      const v1 = await store.put('cas/k', utf8('v1'));

      const v2 = await store.putIfMatch('cas/k', utf8('v2'), v1.etag);
      const stale = await store.putIfMatch('cas/k', utf8('v3'), v1.etag);

      expect(v2?.etag).toEqual(expect.any(String));
      expect(v2!.etag).not.toBe(v1.etag);
      expect(stale).toBeUndefined();
      const got = await store.get('cas/k');
      expect(fromUtf8(got.body)).toBe('v2');
      expect(got.etag).toBe(v2!.etag);
      await expect(store.putIfMatch('cas/missing', utf8('x'), v1.etag)).rejects.toBeInstanceOf(ObjectNotFoundError);
      expect(await store.head('cas/missing')).toBeUndefined();
    });

    it('lists by prefix, nested, in code-point key order', async () => {
      const store = await makeStore();
      const shuffled = [...ORDERED_KEYS].reverse();
      for (const key of shuffled) await store.put(key, utf8(key));

      const all = await listAll(store, '');

      expect(all.map((o) => o.key)).toEqual(ORDERED_KEYS);
      expect(all.find((o) => o.key === 'a/b/d/e')?.size).toBe(utf8('a/b/d/e').length);
      expect((await listAll(store, 'a/')).map((o) => o.key)).toEqual(['a/b/c', 'a/b/d/e', 'a/c']);
      expect((await listAll(store, 'a')).map((o) => o.key)).toEqual(['a-b', 'a/b/c', 'a/b/d/e', 'a/c', 'a0', 'ab']);
      expect((await listAll(store, 'a/b/d')).map((o) => o.key)).toEqual(['a/b/d/e']);
      expect((await listAll(store, 'snapshot/snapshot-1')).map((o) => o.key)).toEqual([
        'snapshot/snapshot-1',
        'snapshot/snapshot-10',
      ]);
      expect(await listAll(store, 'nope/')).toEqual([]);
      expect(await listAll(store, 'a/b/c/')).toEqual([]);
    });

    it('lists only the keys after startAfter, in order, also when startAfter is no key or a folder', async () => {
      const store = await makeStore();
      for (const key of ORDERED_KEYS) await store.put(key, utf8(key));
      const listAfter = async (prefix: string, startAfter: string) => {
        const out: string[] = [];
        for await (const o of store.list(prefix, { startAfter })) out.push(o.key);
        return out;
      };

      expect(await listAfter('', 'a/b/c')).toEqual(ORDERED_KEYS.slice(ORDERED_KEYS.indexOf('a/b/c') + 1));
      expect(await listAfter('a/', 'a/b/c')).toEqual(['a/b/d/e', 'a/c']);
      expect(await listAfter('a/', 'a/b/')).toEqual(['a/b/c', 'a/b/d/e', 'a/c']);
      expect(await listAfter('a/', 'a/c')).toEqual([]);
      expect(await listAfter('a/', '')).toEqual(['a/b/c', 'a/b/d/e', 'a/c']);
    });

    it('lists more than one page (1100 keys) completely and in order', async () => {
      const store = await makeStore();
      const keys = Array.from({ length: 1100 }, (_, i) => `page/k-${String(i).padStart(4, '0')}`);
      await runPool(keys.length, 32, (i) => store.put(keys[i], utf8(String(i))).then(() => undefined));

      const listed = await listAll(store, 'page/');

      expect(listed.map((o) => o.key)).toEqual(keys);
      expect((await listAll(store, 'page/k-10')).map((o) => o.key)).toEqual(keys.slice(1000, 1100));
    });

    it('deletes with deleteIfMatch only while the etag is current: a version written since is kept', async () => {
      const store = await makeStore();
      const v1 = await store.put('cdel/k', utf8('v1'));
      const v2 = await store.put('cdel/k', utf8('v2'));

      const stale = await store.deleteIfMatch!('cdel/k', v1.etag);
      const kept = fromUtf8((await store.get('cdel/k')).body);
      const current = await store.deleteIfMatch!('cdel/k', v2.etag);
      const again = await store.deleteIfMatch!('cdel/k', v2.etag);

      expect(stale).toBe(false);
      expect(kept).toBe('v2');
      expect(current).toBe(true);
      expect(again).toBe(false);
      expect(await store.head('cdel/k')).toBeUndefined();
      expect(await store.deleteIfMatch!('cdel/never-existed', v1.etag)).toBe(false);
    });

    it('deletes idempotently', async () => {
      const store = await makeStore();
      await store.put('del/k', utf8('x'));
      await store.put('del/other', utf8('y'));

      await store.delete('del/k');
      await store.delete('del/k');
      await store.delete('del/never-existed');

      await expect(store.get('del/k')).rejects.toBeInstanceOf(ObjectNotFoundError);
      expect(await store.head('del/k')).toBeUndefined();
      expect((await listAll(store, 'del/')).map((o) => o.key)).toEqual(['del/other']);
      expect(await store.putIfAbsent('del/k', utf8('again'))).toBeDefined();
    });

    it('handles keys with spaces and unicode', async () => {
      const store = await makeStore();
      const key = 'dt=2024 01/ünïcødé 名前/x';

      const created = await store.putIfAbsent(key, utf8('α'));
      const swapped = await store.putIfMatch(key, utf8('β'), created!.etag);

      expect(fromUtf8((await store.get(key)).body)).toBe('β');
      expect((await store.head(key))?.etag).toBe(swapped!.etag);
      expect((await listAll(store, 'dt=2024 01/ünïcødé')).map((o) => o.key)).toEqual([key]);
      await store.delete(key);
      expect(await listAll(store, 'dt=2024 01/')).toEqual([]);
    });

    it('rejects keys that are not safe relative paths', async () => {
      const store = await makeStore();
      for (const key of BAD_KEYS) {
        await expect(store.get(key), key).rejects.toBeInstanceOf(InvalidKeyError);
        await expect(store.getRange(key, 0, 1), key).rejects.toBeInstanceOf(InvalidKeyError);
        await expect(store.head(key), key).rejects.toBeInstanceOf(InvalidKeyError);
        await expect(store.put(key, utf8('x')), key).rejects.toBeInstanceOf(InvalidKeyError);
        await expect(store.putIfAbsent(key, utf8('x')), key).rejects.toBeInstanceOf(InvalidKeyError);
        await expect(store.putIfMatch(key, utf8('x'), '"e"'), key).rejects.toBeInstanceOf(InvalidKeyError);
        await expect(store.delete(key), key).rejects.toBeInstanceOf(InvalidKeyError);
      }
      for (const prefix of ['../', '/abs', 'a//', 'a/../', 'a\\b']) {
        await expect(listAll(store, prefix), prefix).rejects.toBeInstanceOf(InvalidKeyError);
      }
      expect(await listAll(store, '')).toEqual([]);
    });

    it('lets exactly one of 32 concurrent putIfAbsent calls win', async () => {
      const store = await makeStore();

      const results = await Promise.all(
        Array.from({ length: 32 }, (_, i) => store.putIfAbsent('race/snapshot-1', utf8(`writer-${i}`))),
      );

      const winners = results.flatMap((r, i) => (r ? [{ i, etag: r.etag }] : []));
      if (winners.length > 1) console.log(`${name}: ${winners.length} putIfAbsent winners (emulator race)`);
      expect(winners.length).toBeGreaterThanOrEqual(1);
      expect(winners.length).toBeLessThanOrEqual(1 + slack);
      const got = await store.get('race/snapshot-1');
      const last = winners.find((w) => fromUtf8(got.body) === `writer-${w.i}`);
      expect(last, "the stored body is a winner's").toBeDefined();
      expect(got.etag).toBe(last!.etag);
    });

    it('loses no update when 16 workers increment a counter with putIfMatch', async () => {
      const store = await makeStore();
      await store.put('cas/counter', utf8('0'));
      // Successful swaps per etag they replaced: a linearizable store lets one swap win per etag.
      const winsPerEtag = new Map<string, number>();

      await Promise.all(
        Array.from({ length: 16 }, async () => {
          for (let n = 0; n < 10; n++) {
            for (let lost = 0; ; lost++) {
              const current = await store.get('cas/counter');
              const next = utf8(String(Number(fromUtf8(current.body)) + 1));
              if (await store.putIfMatch('cas/counter', next, current.etag)) {
                winsPerEtag.set(current.etag, (winsPerEtag.get(current.etag) ?? 0) + 1);
                break;
              }
              // Jittered exponential backoff, as a real CAS loop would: with a flat few-ms wait, 16
              // workers on a slow (busy) store keep colliding and the work grows without bound.
              await sleep(Math.random() * Math.min(64, 2 ** lost));
            }
          }
        }),
      );

      const extraWins = [...winsPerEtag.values()].reduce((n, wins) => n + wins - 1, 0);
      if (extraWins > 0) console.log(`${name}: ${extraWins} swaps won on an already replaced etag (emulator race)`);
      expect(extraWins).toBeLessThanOrEqual(slack);
      expect(fromUtf8((await store.get('cas/counter')).body)).toBe(String(160 - extraWins));
    }, 300_000);
  });
}
