/**
 * Split fences: one delivery of a consumer's bucket at a time across processes (Lambda
 * containers). SQS FIFO hands a message again to another container once its visibility timeout
 * ran out, even while the first container's sink call for it still runs; without a fence the late
 * first call would land after the second container delivered that split and the next ones (per-key
 * order broken). The fence object `consumer/consumer-<id>@fence/[<partition>/]bucket-<n>` names
 * the holder, until when it holds the bucket (no sink call of the holder runs past that time), and
 * a fencing token that grows with every hold. It is taken with put-if-absent / put-if-match,
 * refused while another holder's hold runs (SplitFenceHeldError), and released when the holder's
 * calls have settled. Every progress write carries the token (progress.ts: a bucket's progress
 * refuses a smaller one), so a holder that was fenced off can no longer move progress. A local
 * reader also names its host and pid: a fence of a process of this host that no longer runs (a
 * killed `varve tail`) holds nothing, as its lease does not (lease.ts). A Lambda container names
 * neither: containers may share a host name and pids, so only the fence's end frees it there.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import * as v from 'valibot';
import { ObjectNotFoundError, SplitFenceHeldError, SplitFenceLostError } from '../errors.js';
import { jsonInt, jsonTime, type JsonSchema } from '../json.js';
import { parseJsonObject } from '../store/json-file.js';
import { utf8, type ObjectStore } from '../store/object-store.js';
import { processIsGone } from './lease.js';
import { bucketKey } from './progress.js';

/** The JSON content of a fence object. */
export interface SplitFence {
  /** Grows by one with every hold of the bucket, never reused. */
  token: number;
  /** Who holds (or last held) the bucket: a process / container id and the invocation. */
  holder: string;
  /** Epoch ms until which the holder may deliver; 0 once released. */
  expiresAt: number;
  acquiredAt: number;
  /** The holder's host and pid, when it is a local process (a fence of a gone process is free). */
  host?: string;
  pid?: number;
}

const SplitFenceSchema: JsonSchema<SplitFence> = v.looseObject({
  token: jsonInt,
  holder: v.string(),
  expiresAt: jsonTime,
  acquiredAt: jsonTime,
  host: v.optional(v.string()),
  pid: v.optional(jsonInt),
});

/** Key of a bucket's fence ('@' never occurs in a consumer id). */
export function splitFenceKey(tablePath: string, consumerId: string, partition: string, bucket: number): string {
  return `${tablePath}/consumer/consumer-${consumerId}@fence/${bucketKey(partition, bucket)}`;
}

/** A bucket's fence with its etag, or undefined. */
export async function readSplitFence(
  store: ObjectStore,
  key: string,
): Promise<{ fence: SplitFence; etag: string } | undefined> {
  try {
    const obj = await store.get(key);
    return { fence: parseJsonObject(store, key, obj.body, SplitFenceSchema), etag: obj.etag };
  } catch (e) {
    if (e instanceof ObjectNotFoundError) return undefined;
    throw e;
  }
}

/** A process's identity as a fence holder: one per process (a Lambda container), fixed for its lifetime. */
const PROCESS_HOLDER = `proc-${randomUUID().slice(0, 12)}`;

/** One hold on a bucket. */
export interface HeldFence {
  token: number;
  expiresAt: number;
}

/**
 * The split fences of one process (a Lambda container) on one consumer: `hold` takes a bucket for
 * an invocation until `until`, `release` gives it back. Remembers the etag of each fence it last
 * wrote, so that a bucket this process released is taken again with one conditional PUT.
 */
export class SplitFences {
  private readonly known = new Map<string, { fence: SplitFence; etag: string }>();

  constructor(
    private readonly store: ObjectStore,
    private readonly tablePath: string,
    readonly consumerId: string,
    readonly processHolder: string = PROCESS_HOLDER,
    private readonly now: () => number = Date.now,
    /** Record this process's host and pid in its holds (local readers; never on Lambda). */
    private readonly local = false,
  ) {}

  /**
   * Takes the bucket for `holder` until `until` with a token above `floor` (the token the bucket's
   * progress carries). While another holder's hold runs, waits for its release up to `waitUntil`
   * (epoch ms), then throws SplitFenceHeldError.
   */
  async hold(
    partition: string,
    bucket: number,
    holder: string,
    until: number,
    floor = 0,
    waitUntil = 0,
  ): Promise<HeldFence> {
    const key = splitFenceKey(this.tablePath, this.consumerId, partition, bucket);
    let found = this.known.get(key);
    // A fence this process released is usually still as it left it: try it without a read first.
    let trusted = found !== undefined && found.fence.expiresAt <= this.now();
    let pauseMs = 100;
    for (let i = 0; i < 10; i++) {
      if (!trusted) found = await readSplitFence(this.store, key);
      trusted = false;
      const now = this.now();
      const other =
        found &&
        found.fence.expiresAt > now &&
        !found.fence.holder.startsWith(`${this.processHolder}/`) &&
        !holderGone(found.fence);
      if (other && now + pauseMs < waitUntil) {
        // The holder usually finishes soon (a redelivery of a split whose first delivery is about
        // to end): waiting here costs a few reads, failing costs the message a receive.
        await new Promise((r) => setTimeout(r, pauseMs));
        pauseMs = Math.min(2000, pauseMs * 2);
        i--;
        continue;
      }
      if (found && other) {
        throw new SplitFenceHeldError(
          `${bucketKey(partition, bucket)} of consumer ${this.consumerId} is being delivered by ${found.fence.holder} (token ${found.fence.token}) until ` +
            `${new Date(found.fence.expiresAt).toISOString()}: a redelivered split waits for that delivery to finish or run out, so that it cannot overtake it`,
          found.fence.holder,
          found.fence.expiresAt,
        );
      }
      const next: SplitFence = {
        token: Math.max(found?.fence.token ?? 0, floor) + 1,
        holder,
        expiresAt: until,
        acquiredAt: now,
        ...(this.local ? { host: hostname(), pid: process.pid } : {}),
      };
      const won = await this.write(key, next, found?.etag);
      if (won) {
        this.known.set(key, { fence: next, etag: won.etag });
        return { token: next.token, expiresAt: until };
      }
    }
    throw new SplitFenceHeldError(
      `the fence of ${bucketKey(partition, bucket)} of consumer ${this.consumerId} kept changing while this reader took it; retried later`,
      'unknown',
      0,
    );
  }

  /** Throws SplitFenceLostError when this process's hold of the bucket (token) ran out. */
  check(partition: string, bucket: number, held: HeldFence): void {
    if (held.expiresAt <= this.now()) {
      throw new SplitFenceLostError(
        `the hold of ${bucketKey(partition, bucket)} of consumer ${this.consumerId} (token ${held.token}) ran out before its progress was recorded; the split is delivered again`,
      );
    }
  }

  /** Gives the bucket back (its token stays, so the next hold's is larger); a fence taken by another holder meanwhile is left alone. */
  async release(partition: string, bucket: number, held: HeldFence): Promise<void> {
    const key = splitFenceKey(this.tablePath, this.consumerId, partition, bucket);
    const mine = this.known.get(key);
    if (!mine || mine.fence.token !== held.token) return;
    const next: SplitFence = { ...mine.fence, expiresAt: 0 };
    const won = await this.write(key, next, mine.etag).catch(() => undefined);
    if (won) this.known.set(key, { fence: next, etag: won.etag });
    else this.known.delete(key);
  }

  private async write(key: string, fence: SplitFence, etag: string | undefined): Promise<{ etag: string } | undefined> {
    try {
      return etag === undefined
        ? await this.store.putIfAbsent(key, utf8(JSON.stringify(fence)))
        : await this.store.putIfMatch(key, utf8(JSON.stringify(fence)), etag);
    } catch (e) {
      if (e instanceof ObjectNotFoundError) return undefined;
      throw e;
    }
  }
}

/** True when the fence names a local process of this host that no longer runs. */
function holderGone(fence: SplitFence): boolean {
  return fence.host !== undefined && typeof fence.pid === 'number' && processIsGone(fence.host, fence.pid);
}
