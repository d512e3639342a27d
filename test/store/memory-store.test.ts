import { describe, expect, it, vi } from 'vitest';
import {
  ConditionalRequestConflictError,
  InjectedFaultError,
  ObjectNotFoundError,
  StoreUnavailableError,
} from '../../lib/errors.js';
import { MemoryStore, StoreCrashedError } from '../../lib/store/memory-store.js';
import { fromUtf8, listAll, utf8 } from '../../lib/store/object-store.js';
import { storeContract } from './store-contract.js';

storeContract('MemoryStore', () => new MemoryStore());
storeContract('MemoryStore with 1 ms latency', () => new MemoryStore({ latencyMs: 1 }));

async function text(store: MemoryStore, key: string): Promise<string> {
  return fromUtf8((await store.get(key)).body);
}

describe('MemoryStore bookkeeping', () => {
  it('counts calls and logs them in order, list by its prefix', async () => {
    const store = new MemoryStore({ uri: 'memory://books' });

    await store.put('a/1', utf8('x'));
    await store.get('a/1');
    await store.head('a/2');
    await listAll(store, 'a/');
    await store.delete('a/1');

    expect(store.uri).toBe('memory://books');
    expect(store.calls).toMatchObject({ put: 1, get: 1, head: 1, list: 1, delete: 1, putIfAbsent: 0 });
    expect(store.callLog).toEqual([
      { op: 'put', key: 'a/1' },
      { op: 'get', key: 'a/1' },
      { op: 'head', key: 'a/2' },
      { op: 'list', key: 'a/' },
      { op: 'delete', key: 'a/1' },
    ]);
    store.resetCallLog();
    expect(store.callLog).toEqual([]);
    expect(store.calls.put).toBe(0);
  });

  it('returns copies, so a caller mutating a body changes nothing stored', async () => {
    const store = new MemoryStore();
    await store.put('k', utf8('abc'));

    const got = await store.get('k');
    got.body.fill(0);

    expect(await text(store, 'k')).toBe('abc');
  });

  it('gives every write a new etag, even for the same bytes', async () => {
    const store = new MemoryStore();

    const a = await store.put('k', utf8('same'));
    const b = await store.put('k', utf8('same'));

    expect(a.etag).not.toBe(b.etag);
    expect(await store.putIfMatch('k', utf8('next'), a.etag)).toBeUndefined();
  });

  it('sorts keys() and backdates objects with setLastModified', async () => {
    const store = new MemoryStore();
    await store.put('b', utf8('1'));
    await store.put('a/x', utf8('2'));

    store.setLastModified('b', 1_000);

    expect(store.keys()).toEqual(['a/x', 'b']);
    expect((await store.head('b'))?.lastModified).toBe(1_000);
    expect((await listAll(store, 'b'))[0].lastModified).toBe(1_000);
    expect(() => store.setLastModified('missing', 1)).toThrow(ObjectNotFoundError);
  });

  it('delays calls by the configured latency', async () => {
    // Fake timers: the delay is checked by the clock the store waits on, not by a wall-clock race.
    vi.useFakeTimers();
    try {
      const store = new MemoryStore();
      store.setLatency(30);
      let done = false;
      const put = store.put('k', utf8('x')).then(() => (done = true));

      await vi.advanceTimersByTimeAsync(29);
      expect(done).toBe(false);
      expect(store.keys()).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      await put;
      expect(store.keys()).toEqual(['k']);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('MemoryStore fault injection', () => {
  it('fails the first matching call by default, before it takes effect', async () => {
    const store = new MemoryStore();
    store.injectFault({ op: 'put' });

    await expect(store.put('k', utf8('x'))).rejects.toBeInstanceOf(InjectedFaultError);

    expect(store.keys()).toEqual([]);
    await store.put('k', utf8('y'));
    expect(await text(store, 'k')).toBe('y');
  });

  it('with when=after applies the call, then throws (an ambiguous outcome)', async () => {
    const store = new MemoryStore();
    store.injectFault({ op: 'putIfAbsent', when: 'after' });

    await expect(store.putIfAbsent('snap/1', utf8('mine'))).rejects.toBeInstanceOf(InjectedFaultError);

    expect(await text(store, 'snap/1')).toBe('mine');
    expect(await store.putIfAbsent('snap/1', utf8('again'))).toBeUndefined();
  });

  it('counts nth among matching calls only, filtered by op list and keyIncludes', async () => {
    const store = new MemoryStore();
    store.injectFault({ op: ['get', 'head'], keyIncludes: 'manifest', nth: 3 });
    await store.put('manifest-1', utf8('m'));
    await store.put('data-1', utf8('d'));

    await store.get('manifest-1'); // 1st match
    await store.get('data-1'); // not matching
    await store.head('manifest-1'); // 2nd match
    const third = store.get('manifest-1'); // 3rd match

    await expect(third).rejects.toBeInstanceOf(InjectedFaultError);
    expect(await text(store, 'manifest-1')).toBe('m'); // the fault is spent
  });

  it('fails `times` consecutive matching calls with the given error', async () => {
    const store = new MemoryStore();
    store.injectFault({ op: 'get', times: 2, error: () => new StoreUnavailableError('503 injected') });
    await store.put('k', utf8('x'));

    await expect(store.get('k')).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.get('k')).rejects.toBeInstanceOf(StoreUnavailableError);

    expect(await text(store, 'k')).toBe('x');
  });

  it('fails a list by its prefix', async () => {
    const store = new MemoryStore();
    await store.put('snapshot/snapshot-1', utf8('1'));
    store.injectFault({ op: 'list', keyIncludes: 'snapshot/' });

    await expect(listAll(store, 'snapshot/')).rejects.toBeInstanceOf(InjectedFaultError);

    expect(await listAll(store, 'snapshot/')).toHaveLength(1);
  });

  it('injects 409 conflicts into conditional puts only, with no effect', async () => {
    const store = new MemoryStore();
    const v1 = await store.put('ptr', utf8('v1'));
    store.injectConflicts(2, 'ptr');

    await store.put('ptr-unconditional', utf8('x')); // not a conditional put: unaffected
    await expect(store.putIfMatch('ptr', utf8('v2'), v1.etag)).rejects.toBeInstanceOf(ConditionalRequestConflictError);
    await expect(store.putIfAbsent('ptr-2', utf8('y'))).rejects.toBeInstanceOf(ConditionalRequestConflictError);

    expect(await text(store, 'ptr')).toBe('v1');
    expect(await store.head('ptr-2')).toBeUndefined();
    expect(await store.putIfMatch('ptr', utf8('v2'), v1.etag)).toBeDefined();
  });

  it('a conflict error names its key and is retryable', async () => {
    const store = new MemoryStore();
    store.injectConflicts(1);

    const attempt = store.putIfAbsent('snapshot/snapshot-9', utf8('s'));

    await expect(attempt).rejects.toMatchObject({ key: 'snapshot/snapshot-9', retryable: true });
  });

  it('clearFaults disarms faults that have not fired', async () => {
    const store = new MemoryStore();
    store.injectFault({ op: 'put', nth: 2 });
    store.injectConflicts(5);

    store.clearFaults();

    await store.put('a', utf8('1'));
    await store.put('b', utf8('2'));
    expect(await store.putIfAbsent('c', utf8('3'))).toBeDefined();
  });
});

describe('MemoryStore crashes', () => {
  it('crashAt before: the call has no effect and every later call fails until restart', async () => {
    const store = new MemoryStore();
    await store.put('kept', utf8('1'));
    store.crashAt({ op: 'putIfAbsent', keyIncludes: 'snapshot-2' });

    await store.putIfAbsent('snapshot-1', utf8('a'));
    await expect(store.putIfAbsent('snapshot-2', utf8('b'))).rejects.toBeInstanceOf(StoreCrashedError);

    expect(store.crashed).toBe(true);
    await expect(store.get('kept')).rejects.toBeInstanceOf(StoreCrashedError);
    await expect(store.head('kept')).rejects.toBeInstanceOf(StoreCrashedError);
    await expect(listAll(store, '')).rejects.toBeInstanceOf(StoreCrashedError);
    await expect(store.delete('kept')).rejects.toBeInstanceOf(StoreCrashedError);
    expect(new StoreCrashedError('x')).toBeInstanceOf(InjectedFaultError);

    store.restart();

    expect(store.crashed).toBe(false);
    expect(store.keys()).toEqual(['kept', 'snapshot-1']);
    expect(await text(store, 'kept')).toBe('1');
  });

  it('crashAt after: the call takes effect, then the process is dead', async () => {
    const store = new MemoryStore();
    store.crashAt({ op: 'put', nth: 2, when: 'after' });

    await store.put('data-1', utf8('1'));
    await expect(store.put('data-2', utf8('2'))).rejects.toBeInstanceOf(StoreCrashedError);
    await expect(store.put('data-3', utf8('3'))).rejects.toBeInstanceOf(StoreCrashedError);
    store.restart();

    expect(store.keys()).toEqual(['data-1', 'data-2']);
  });

  it('a crash also kills calls that were in flight, and restart disarms pending faults', async () => {
    const store = new MemoryStore({ latencyMs: 20 });
    store.crashAt({ op: 'delete' });
    store.injectFault({ op: 'get', nth: 5 });

    const crash = store.delete('anything');
    const inFlight = store.put('slow', utf8('x')); // still waiting out its latency when the crash fires

    await expect(crash).rejects.toBeInstanceOf(StoreCrashedError);
    await expect(inFlight).rejects.toBeInstanceOf(StoreCrashedError);
    expect(store.keys()).toEqual([]);
    store.restart();
    await store.put('k', utf8('v'));
    for (let i = 0; i < 6; i++) await store.get('k');
  });
});
