/**
 * An in-memory object store for tests, with the same contract as the folder and S3 stores plus
 * fault injection: failing calls before or after they take effect, S3-style 409 conflicts, latency,
 * and a crash after which every call fails until `restart()` (a new process over the same objects).
 */
import { ConditionalRequestConflictError, InjectedFaultError, ObjectNotFoundError } from '../errors.js';
import { sleep } from './backoff.js';
import { checkByteRange, clampByteRange } from './byte-range.js';
import { sameEtag } from './etag.js';
import { checkKeyPrefix, checkObjectKey, compareObjectKeys } from './object-key.js';
import type { ListOptions, ObjectInfo, ObjectStore, StoredObject } from './object-store.js';

/** The operations of a store, as counted and matched by fault injection. */
export type StoreOp =
  | 'get'
  | 'getRange'
  | 'head'
  | 'put'
  | 'putIfAbsent'
  | 'putIfMatch'
  | 'list'
  | 'delete'
  | 'deleteIfMatch';

const STORE_OPS: StoreOp[] = [
  'get',
  'getRange',
  'head',
  'put',
  'putIfAbsent',
  'putIfMatch',
  'list',
  'delete',
  'deleteIfMatch',
];

/** Which calls a fault hits, when, and with what error. */
export interface FaultSpec {
  /** Operations to match; default: any. */
  op?: StoreOp | StoreOp[];
  /** Only calls whose key (or list prefix) contains this. */
  keyIncludes?: string;
  /** 1-based index among matching calls of the first failing one; default 1. */
  nth?: number;
  /** before: the call has no effect; after: it takes effect, then throws (an ambiguous outcome). Default before. */
  when?: 'before' | 'after';
  /** The error to throw; default `InjectedFaultError`. Receives the call it fails. */
  error?: (call: { op: StoreOp; key: string }) => Error;
  /** How many consecutive matching calls fail; default 1. */
  times?: number;
}

/** Thrown by a crashed `MemoryStore`: the process that used it is considered dead. */
export class StoreCrashedError extends InjectedFaultError {}

interface ArmedFault {
  ops?: Set<StoreOp>;
  keyIncludes?: string;
  nth: number;
  times: number;
  when: 'before' | 'after';
  /** Matching calls seen so far. */
  seen: number;
  crash: boolean;
  error?: (call: { op: StoreOp; key: string }) => Error;
}

interface MemoryObject {
  body: Uint8Array;
  etag: string;
  lastModified: number;
}

let anonymousStores = 0;

/** An object store held in a Map; see the file comment for its fault injection. */
export class MemoryStore implements ObjectStore {
  readonly uri: string;
  /** How many times each operation was called (including calls that failed). */
  readonly calls: Record<StoreOp, number> = Object.fromEntries(STORE_OPS.map((op) => [op, 0])) as Record<
    StoreOp,
    number
  >;
  /** Every call in order, with its key (a list's prefix). */
  readonly callLog: Array<{ op: StoreOp; key: string }> = [];
  private readonly objects = new Map<string, MemoryObject>();
  private faults: ArmedFault[] = [];
  private latencyMs: number;
  private writes = 0;
  private isCrashed = false;

  constructor(opts: { latencyMs?: number; uri?: string } = {}) {
    this.latencyMs = opts.latencyMs ?? 0;
    this.uri = opts.uri ?? `memory://anonymous-${++anonymousStores}`;
  }

  /** True once a `crashAt` fault fired, until `restart()`. */
  get crashed(): boolean {
    return this.isCrashed;
  }

  /** Empties `calls` and `callLog`. */
  resetCallLog(): void {
    for (const op of STORE_OPS) this.calls[op] = 0;
    this.callLog.length = 0;
  }

  /** Arms a fault; see `FaultSpec`. Faults count their matching calls independently. */
  injectFault(f: FaultSpec): void {
    this.faults.push(this.arm(f, false));
  }

  /** The next `count` conditional puts (whose key contains `keyIncludes`) fail with a 409, without effect. */
  injectConflicts(count: number, keyIncludes?: string): void {
    this.injectFault({
      op: ['putIfAbsent', 'putIfMatch'],
      keyIncludes,
      times: count,
      error: ({ key }) => new ConditionalRequestConflictError(key),
    });
  }

  /** Makes every call wait `ms` milliseconds before it takes effect. */
  setLatency(ms: number): void {
    this.latencyMs = ms;
  }

  /** At the matching call, throws `StoreCrashedError`, and so does every call after it until `restart()`. */
  crashAt(f: Omit<FaultSpec, 'error' | 'times'>): void {
    this.faults.push(this.arm({ ...f, times: 1 }, true));
  }

  /** A new process over the same objects: clears the crash and every armed fault. */
  restart(): void {
    this.isCrashed = false;
    this.faults = [];
  }

  /** Disarms every fault not yet fired (the crash state, if any, stays). */
  clearFaults(): void {
    this.faults = [];
  }

  /** Every stored key, in key order. */
  keys(): string[] {
    return [...this.objects.keys()].sort(compareObjectKeys);
  }

  /** Backdates (or postdates) an object, for age-based logic such as orphan cleanup. */
  setLastModified(key: string, ms: number): void {
    const o = this.objects.get(checkObjectKey(key));
    if (!o) throw new ObjectNotFoundError(key);
    o.lastModified = ms;
  }

  async get(key: string): Promise<StoredObject> {
    const after = await this.enter('get', checkObjectKey(key));
    const o = this.objects.get(key);
    after();
    if (!o) throw new ObjectNotFoundError(key);
    return { body: o.body.slice(), etag: o.etag, lastModified: o.lastModified };
  }

  async getRange(key: string, start: number, end: number): Promise<Uint8Array> {
    checkByteRange(key, start, end);
    const after = await this.enter('getRange', checkObjectKey(key));
    const o = this.objects.get(key);
    after();
    if (!o) throw new ObjectNotFoundError(key);
    return o.body.slice(...clampByteRange(start, end, o.body.length));
  }

  async head(key: string): Promise<(ObjectInfo & { etag: string }) | undefined> {
    const after = await this.enter('head', checkObjectKey(key));
    const o = this.objects.get(key);
    after();
    return o && { key, size: o.body.length, lastModified: o.lastModified, etag: o.etag };
  }

  async put(key: string, body: Uint8Array): Promise<{ etag: string }> {
    const after = await this.enter('put', checkObjectKey(key));
    const etag = this.store(key, body);
    after();
    return { etag };
  }

  async putIfAbsent(key: string, body: Uint8Array): Promise<{ etag: string } | undefined> {
    const after = await this.enter('putIfAbsent', checkObjectKey(key));
    // Check and set run in one synchronous step: no other call can interleave.
    const etag = this.objects.has(key) ? undefined : this.store(key, body);
    after();
    return etag === undefined ? undefined : { etag };
  }

  async putIfMatch(key: string, body: Uint8Array, etag: string): Promise<{ etag: string } | undefined> {
    const after = await this.enter('putIfMatch', checkObjectKey(key));
    const o = this.objects.get(key);
    const next = o && sameEtag(o.etag, etag) ? this.store(key, body) : undefined;
    after();
    if (!o) throw new ObjectNotFoundError(key);
    return next === undefined ? undefined : { etag: next };
  }

  async *list(prefix: string, opts: ListOptions = {}): AsyncIterable<ObjectInfo> {
    const after = await this.enter('list', checkKeyPrefix(prefix));
    // A snapshot of the listing at call time, as one S3 page would be.
    const found: ObjectInfo[] = [];
    for (const key of this.keys()) {
      if (!key.startsWith(prefix)) continue;
      if (opts.startAfter !== undefined && compareObjectKeys(key, opts.startAfter) <= 0) continue;
      const o = this.objects.get(key)!;
      found.push({ key, size: o.body.length, lastModified: o.lastModified });
    }
    after();
    yield* found;
  }

  async delete(key: string): Promise<void> {
    const after = await this.enter('delete', checkObjectKey(key));
    this.objects.delete(key);
    after();
  }

  async deleteIfMatch(key: string, etag: string): Promise<boolean> {
    const after = await this.enter('deleteIfMatch', checkObjectKey(key));
    // Compare and delete in one synchronous step: no other call can interleave.
    const o = this.objects.get(key);
    const match = o !== undefined && sameEtag(o.etag, etag);
    if (match) this.objects.delete(key);
    after();
    return match;
  }

  private store(key: string, body: Uint8Array): string {
    // A counter makes every write's etag unique, even for equal bodies (no ABA on compare-and-swap).
    const etag = `"mem-${++this.writes}"`;
    this.objects.set(key, { body: body.slice(), etag, lastModified: Date.now() });
    return etag;
  }

  private arm(f: FaultSpec, crash: boolean): ArmedFault {
    const ops = f.op === undefined ? undefined : new Set(Array.isArray(f.op) ? f.op : [f.op]);
    return {
      ops,
      keyIncludes: f.keyIncludes,
      nth: f.nth ?? 1,
      times: f.times ?? 1,
      when: f.when ?? 'before',
      seen: 0,
      crash,
      error: f.error,
    };
  }

  /**
   * Records a call, waits the latency, and applies faults: throws for a `before` fault, or returns
   * a function that throws for an `after` fault once the caller has applied the call's effect.
   */
  private async enter(op: StoreOp, key: string): Promise<() => void> {
    this.calls[op]++;
    this.callLog.push({ op, key });
    if (this.isCrashed) throw this.crashError(op, key);
    // Which faults hit this call is decided when it is made, so `nth` counts calls in call order.
    let firing: ArmedFault | undefined;
    for (const f of this.faults) {
      if (f.ops && !f.ops.has(op)) continue;
      if (f.keyIncludes !== undefined && !key.includes(f.keyIncludes)) continue;
      f.seen++;
      if (!firing && f.seen >= f.nth && f.seen < f.nth + f.times) firing = f;
    }
    // A fault whose last failing call has come is spent.
    this.faults = this.faults.filter((f) => f.seen < f.nth + f.times - 1);
    if (this.latencyMs > 0) await sleep(this.latencyMs);
    // A crash while this call was waiting kills it too.
    if (this.isCrashed) throw this.crashError(op, key);
    if (firing?.when === 'before') throw this.fire(firing, op, key);
    const after = firing;
    return after
      ? () => {
          throw this.fire(after, op, key);
        }
      : () => {};
  }

  private fire(f: ArmedFault, op: StoreOp, key: string): Error {
    if (f.crash) {
      this.isCrashed = true;
      return this.crashError(op, key);
    }
    return f.error ? f.error({ op, key }) : new InjectedFaultError(`injected fault on ${op} ${key}`);
  }

  private crashError(op: StoreOp, key: string): StoreCrashedError {
    return new StoreCrashedError(
      `memory store ${this.uri} crashed (injected) at ${op} ${key}; call restart() to continue`,
    );
  }
}
