/**
 * Consumer leases with fencing: one reader group holds a consumer id at a time (Kafka's group
 * membership, for a consumer whose position lives in the table). The lease object
 * `consumer/consumer-<id>@lease` names the holder (host, pid, reader id), when the lease ends, and
 * a fencing token that grows by one with every new holder. It is created with put-if-absent and
 * taken over or renewed only with put-if-match, so two readers can never both believe they hold
 * it; every progress write carries the token, and a bucket's progress refuses a smaller token
 * (progress.ts), so a reader that lost its lease can no longer move a position. A lease that ran
 * out before its renewal (the process was blocked) is taken back by the same put-if-match when
 * nobody wrote the lease object meanwhile; otherwise the reader has lost it.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import * as v from 'valibot';
import { ConsumerLeaseHeldError, ConsumerLeaseLostError, ObjectNotFoundError } from '../errors.js';
import { jsonInt, jsonTime, type JsonSchema } from '../json.js';
import { parseJsonObject } from '../store/json-file.js';
import { checkConsumerId, readTombstone } from '../snapshot/consumer.js';
import { utf8, type ObjectStore } from '../store/object-store.js';

/** Who holds a lease. */
export interface LeaseHolder {
  host: string;
  pid: number;
  readerId: string;
}

/** The JSON content of a lease object. */
export interface ConsumerLease {
  holder: LeaseHolder;
  /** Fencing token: grows by one with every new holder, never reused. */
  token: number;
  /** Epoch ms after which anyone may take the lease. */
  expiresAt: number;
  acquiredAt: number;
  /** The UUID of the table the lease was taken on (table-identity.ts); a lease left by a dropped table is free. */
  tableUuid?: string;
}

const ConsumerLeaseSchema: JsonSchema<ConsumerLease> = v.looseObject({
  holder: v.looseObject({ host: v.string(), pid: jsonInt, readerId: v.string() }),
  token: jsonInt,
  expiresAt: jsonTime,
  acquiredAt: jsonTime,
  tableUuid: v.optional(v.string()),
});

/** Key of a consumer's lease ('@' never occurs in a consumer id). */
export function leaseKey(tablePath: string, consumerId: string): string {
  return `${tablePath}/consumer/consumer-${consumerId}@lease`;
}

/** The holder of this process, with a fresh reader id. */
export function localHolder(readerId = `reader-${randomUUID().slice(0, 8)}`): LeaseHolder {
  return { host: hostname(), pid: process.pid, readerId };
}

/** A consumer's lease and its etag, or undefined. */
export async function readLease(
  store: ObjectStore,
  tablePath: string,
  consumerId: string,
): Promise<{ lease: ConsumerLease; etag: string } | undefined> {
  checkConsumerId(consumerId);
  const key = leaseKey(tablePath, consumerId);
  try {
    const obj = await store.get(key);
    const lease = parseJsonObject(store, key, obj.body, ConsumerLeaseSchema);
    return { lease, etag: obj.etag };
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return undefined;
    throw e;
  }
}

/** Describes a holder for messages: `reader tail-1a2b (host h, pid 42)`. */
function describeHolder(h: LeaseHolder): string {
  return `reader ${h.readerId} (host ${h.host}, pid ${h.pid})`;
}

/** True when the holder is a process of this host that no longer runs (a killed reader): its lease can be taken at once. */
function holderIsDead(h: LeaseHolder): boolean {
  return processIsGone(h.host, h.pid);
}

/** True when `pid` on `host` is a process of this host, not this one, that no longer runs. */
export function processIsGone(host: string, pid: number): boolean {
  if (host !== hostname() || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * Keeps an expired id's fencing token when its tombstone goes (the id is resumed or started again):
 * expiry deletes the lease object and leaves its token in the tombstone, and once the tombstone is
 * gone too the next lease would start at token 1 again — below the token of progress a reader of
 * the expired id recorded after expiry, which would fence every new reader off for good. Writes a
 * lease object that has already ended, carrying `token`, unless a lease object exists (a reader
 * that took the id meanwhile took its token from the tombstone). A reader still holding the
 * expired lease finds it gone at its next renewal or verify, and stops.
 */
export async function keepLeaseToken(
  store: ObjectStore,
  tablePath: string,
  consumerId: string,
  token: number,
  tableUuid?: string,
): Promise<void> {
  const ended: ConsumerLease = {
    holder: { host: '', pid: 0, readerId: 'expired' },
    token,
    expiresAt: 0,
    acquiredAt: 0,
    ...(tableUuid === undefined ? {} : { tableUuid }),
  };
  await store.putIfAbsent(leaseKey(tablePath, consumerId), utf8(JSON.stringify(ended)));
}

/** Options of a lease. */
export interface LeaseOptions {
  holder?: LeaseHolder;
  /** How long a lease lasts without renewal. @default 30_000 */
  ttlMs?: number;
  /** Take the lease even when another holder's has not expired (it is fenced off). */
  takeover?: boolean;
  now?: () => number;
  /** The UUID of the table read (recorded in the lease). */
  tableUuid?: string;
  /** Where a lease taken back after it ran out is reported (a WARN line). @default console.error */
  log?: (line: string) => void;
}

/** One reader group's hold on a consumer id: acquire, renew, check, release. */
export class ConsumerLeaseHandle {
  readonly holder: LeaseHolder;
  readonly ttlMs: number;
  private etag?: string;
  private current?: ConsumerLease;
  private lost?: ConsumerLeaseLostError;
  private readonly now: () => number;
  private readonly takeover: boolean;
  private readonly tableUuid?: string;
  private readonly log: (line: string) => void;
  /** The renewal under way: concurrent renewals share it (a second write with the same etag would fail). */
  private renewing?: Promise<void>;

  constructor(
    private readonly store: ObjectStore,
    private readonly tablePath: string,
    readonly consumerId: string,
    opts: LeaseOptions = {},
  ) {
    this.holder = opts.holder ?? localHolder();
    this.ttlMs = opts.ttlMs ?? 30_000;
    this.now = opts.now ?? Date.now;
    this.takeover = opts.takeover ?? false;
    this.tableUuid = opts.tableUuid;
    this.log = opts.log ?? ((line) => console.error(line));
  }

  /** True between `acquire` and `release` (even if the lease was lost meanwhile). */
  get held(): boolean {
    return this.current !== undefined;
  }

  /** The fencing token held (after `acquire`). */
  get token(): number {
    if (this.current === undefined)
      throw new ConsumerLeaseLostError(`consumer ${this.consumerId} has no lease yet; acquire it first`);
    return this.current.token;
  }

  /**
   * Takes the lease: creates it, or takes it over when it has expired, its holder's process is
   * gone, or `takeover` was asked for. Throws ConsumerLeaseHeldError naming a live holder.
   */
  async acquire(): Promise<void> {
    const key = leaseKey(this.tablePath, this.consumerId);
    for (let i = 0; i < 20; i++) {
      const found = await readLease(this.store, this.tablePath, this.consumerId);
      const now = this.now();
      if (found) {
        const { lease } = found;
        // A lease taken on another table of this name (dropped since) holds nothing of this one.
        const otherTable =
          lease.tableUuid !== undefined && this.tableUuid !== undefined && lease.tableUuid !== this.tableUuid;
        const free =
          otherTable || lease.expiresAt <= now || holderIsDead(lease.holder) || sameHolder(lease.holder, this.holder);
        if (!free && !this.takeover) {
          throw new ConsumerLeaseHeldError(
            `consumer ${this.consumerId} is being read by ${describeHolder(lease.holder)}, whose lease runs until ` +
              `${new Date(lease.expiresAt).toISOString()}; one reader group at a time reads a consumer id. Stop that reader, ` +
              'use another --consumer-id, or pass --takeover to fence it off',
            lease.holder,
            lease.expiresAt,
          );
        }
      }
      const next: ConsumerLease = {
        holder: this.holder,
        token: (found?.lease.token ?? (await this.expiredToken())) + 1,
        expiresAt: now + this.ttlMs,
        acquiredAt: now,
        ...(this.tableUuid === undefined ? {} : { tableUuid: this.tableUuid }),
      };
      const won = found
        ? await this.cas(key, next, found.etag)
        : await this.store.putIfAbsent(key, utf8(JSON.stringify(next)));
      if (won) {
        this.etag = won.etag;
        this.current = next;
        this.lost = undefined;
        return;
      }
    }
    throw new ConsumerLeaseHeldError(
      `the lease of consumer ${this.consumerId} kept changing while this reader took it; retry`,
      this.holder,
      0,
    );
  }

  /** The last token of the id before its consumer expired and the lease was deleted (expire-consumers.ts), or 0. */
  private async expiredToken(): Promise<number> {
    return (await readTombstone(this.store, this.tablePath, this.consumerId))?.leaseToken ?? 0;
  }

  /**
   * Extends the lease (one write at a time: a renewal during another one shares it). A lease that
   * ran out before this renewal (the process was blocked past it, or could not reach the store) is
   * taken back when nobody wrote the lease object since — the conditional write with this holder's
   * etag proves it, and the token stays — with a WARN line. A lease another reader took meanwhile
   * makes this and every later `check()` throw ConsumerLeaseLostError.
   */
  async renew(): Promise<void> {
    this.renewing ??= this.renewOnce().finally(() => (this.renewing = undefined));
    return this.renewing;
  }

  private async renewOnce(): Promise<void> {
    if (this.lost) throw this.lost;
    if (this.current === undefined)
      throw new ConsumerLeaseLostError(`consumer ${this.consumerId} has no lease yet; acquire it first`);
    const now = this.now();
    const late = now - this.current.expiresAt;
    const next: ConsumerLease = { ...this.current, expiresAt: now + this.ttlMs };
    const won = await this.cas(leaseKey(this.tablePath, this.consumerId), next, this.etag!);
    if (won) {
      this.etag = won.etag;
      this.current = next;
      if (late >= 0)
        this.log(
          `varve: consumer ${this.consumerId}: the lease of ${describeHolder(this.holder)} ran out ${late} ms before it was renewed ` +
            '(this process was blocked, e.g. by a sink doing synchronous work, or could not reach the store); no other reader ' +
            `had taken it, so this reader took it back (token ${next.token}) and goes on delivering. Keep sink calls shorter than the lease or raise leaseMs`,
        );
      return;
    }
    const found = await readLease(this.store, this.tablePath, this.consumerId);
    this.lost = new ConsumerLeaseLostError(
      `consumer ${this.consumerId}: this reader (${describeHolder(this.holder)}) lost its lease` +
        (found ? ` to ${describeHolder(found.lease.holder)} (token ${found.lease.token})` : '') +
        (late >= 0
          ? `, which had run out ${late} ms before this reader renewed it (this process was blocked or could not reach the store)`
          : '') +
        '; it stops delivering and recording progress',
    );
    throw this.lost;
  }

  /**
   * Throws ConsumerLeaseLostError unless the lease is held; a lease that ran out is renewed first
   * (`renew`: taken back when nobody else took it). The check a reader makes before it delivers or
   * records progress.
   */
  async ensure(): Promise<void> {
    if (this.lost) throw this.lost;
    if (this.current !== undefined && this.current.expiresAt <= this.now()) await this.renew();
    this.check();
  }

  /** Throws ConsumerLeaseLostError unless the lease is held and has not run out. */
  check(): void {
    if (this.lost) throw this.lost;
    if (this.current === undefined)
      throw new ConsumerLeaseLostError(`consumer ${this.consumerId} has no lease yet; acquire it first`);
    if (this.current.expiresAt <= this.now()) {
      throw new ConsumerLeaseLostError(
        `consumer ${this.consumerId}: the lease of ${describeHolder(this.holder)} ran out before it was renewed; it stops delivering`,
      );
    }
  }

  /**
   * Reads the lease object and throws ConsumerLeaseLostError unless it still names this holder and
   * token: the check a reader makes before handing a batch to its sink, so a reader fenced off by
   * a takeover stops at its next batch instead of its next renewal.
   */
  async verify(): Promise<void> {
    await this.ensure();
    const found = await readLease(this.store, this.tablePath, this.consumerId);
    if (found && found.lease.token === this.current!.token && sameHolder(found.lease.holder, this.holder)) return;
    this.lost = new ConsumerLeaseLostError(
      `consumer ${this.consumerId}: this reader (${describeHolder(this.holder)}) lost its lease` +
        (found ? ` to ${describeHolder(found.lease.holder)} (token ${found.lease.token})` : '') +
        '; it stops delivering and recording progress',
    );
    throw this.lost;
  }

  /** Gives the lease up (it expires now; the token stays, so the next holder's is larger). */
  async release(): Promise<void> {
    await this.renewing?.catch(() => undefined);
    if (this.lost || this.current === undefined || this.etag === undefined) return;
    const next: ConsumerLease = { ...this.current, expiresAt: this.now() };
    await this.cas(leaseKey(this.tablePath, this.consumerId), next, this.etag).catch(() => undefined);
    this.current = undefined;
  }

  private async cas(key: string, lease: ConsumerLease, etag: string): Promise<{ etag: string } | undefined> {
    try {
      return await this.store.putIfMatch(key, utf8(JSON.stringify(lease)), etag);
    } catch (e) {
      if (e instanceof ObjectNotFoundError) return undefined;
      throw e;
    }
  }
}

function sameHolder(a: LeaseHolder, b: LeaseHolder): boolean {
  return a.host === b.host && a.pid === b.pid && a.readerId === b.readerId;
}
