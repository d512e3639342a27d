/**
 * Consumer leases and fenced progress (issue 10, repro 2): one holder at a time, takeover raises
 * the fencing token, a fenced-off reader can neither deliver nor move progress, and a bucket's
 * progress never moves backwards.
 */
import { describe, expect, it } from 'vitest';
import { ConsumerLeaseHeldError, ConsumerLeaseLostError } from '../../lib/errors.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { listAll } from '../../lib/store/object-store.js';
import { ConsumerLeaseHandle } from '../../lib/stream/lease.js';
import { advanceBucketProgress, readBucketProgressEntry } from '../../lib/stream/progress.js';

const T = 'db.db/t';
const holder = (readerId: string) => ({ host: 'elsewhere', pid: 1, readerId });

describe('ConsumerLeaseHandle', () => {
  it('refuses a second holder, lets --takeover fence the first off with a larger token', async () => {
    // Prepare
    let now = 1_000;
    const store = new MemoryStore();
    const a = new ConsumerLeaseHandle(store, T, 'c1', { holder: holder('a'), ttlMs: 30_000, now: () => now });
    await a.acquire();
    // Act
    const b = new ConsumerLeaseHandle(store, T, 'c1', { holder: holder('b'), ttlMs: 30_000, now: () => now });
    const refused = await b.acquire().catch((e) => e);
    const t = new ConsumerLeaseHandle(store, T, 'c1', {
      holder: holder('t'),
      ttlMs: 30_000,
      takeover: true,
      now: () => now,
    });
    await t.acquire();
    // Assess
    expect(refused).toBeInstanceOf(ConsumerLeaseHeldError);
    expect(refused.message).toMatch(/reader a \(host elsewhere, pid 1\)/);
    expect([a.token, t.token]).toEqual([1, 2]);
    await expect(a.verify()).rejects.toThrow(ConsumerLeaseLostError);
    await expect(a.renew()).rejects.toThrow(/lost its lease to reader t/);
    // An expired lease is free for anyone, without --takeover.
    now += 31_000;
    await b.acquire();
    expect(b.token).toBe(3);
  });
});

describe('advanceBucketProgress', () => {
  it('never moves a bucket backwards and refuses a writer with an older token', async () => {
    const store = new MemoryStore();
    const at = (snapshot: number, token: number) => ({ run: 'r', snapshot, updated: 0, token });
    const first = await advanceBucketProgress(store, T, 'c1', '', 0, at(4, 1), undefined);
    // A reader whose split outlived its visibility comes back with an older snapshot: refused, not written.
    const stale = await advanceBucketProgress(store, T, 'c1', '', 0, at(3, 1), undefined);
    await advanceBucketProgress(store, T, 'c1', '', 0, at(5, 2), first);
    const fenced = await advanceBucketProgress(store, T, 'c1', '', 0, at(9, 1), undefined).catch((e) => e);
    expect(stale).toBeUndefined();
    expect(fenced).toBeInstanceOf(ConsumerLeaseLostError);
    expect((await readBucketProgressEntry(store, T, 'c1', '', 0))?.progress).toMatchObject({ snapshot: 5, token: 2 });
  });

  it('does not re-create progress that vanished under the reader (its table was dropped)', async () => {
    const store = new MemoryStore();
    const at = (snapshot: number) => ({ run: 'r', snapshot, updated: 0, token: 1 });
    const first = await advanceBucketProgress(store, T, 'c1', '', 0, at(4), undefined);
    for (const o of await listAll(store, T)) await store.delete(o.key);
    const err = await advanceBucketProgress(store, T, 'c1', '', 0, at(5), first).catch((e) => e);
    expect(err).toBeInstanceOf(ConsumerLeaseLostError);
    expect(String(err)).toMatch(/was removed while this reader delivered/);
    expect(await listAll(store, T)).toEqual([]);
  });
});

/** Reader a holding c1's 30 s lease on a driven clock, logging into `lines`. */
async function heldLease() {
  const clock = { now: 1_000 };
  const store = new MemoryStore();
  const lines: string[] = [];
  const a = new ConsumerLeaseHandle(store, T, 'c1', {
    holder: holder('a'),
    ttlMs: 30_000,
    now: () => clock.now,
    log: (l) => lines.push(l),
  });
  await a.acquire();
  return { store, lines, a, clock };
}

describe('a lease that ran out before it was renewed (a process blocked past its lease)', () => {
  it('is taken back with its token when nobody wrote the lease object since, with a WARN line', async () => {
    // Prepare
    const { store, lines, a, clock } = await heldLease();
    // Act: 45 s pass without a renewal; two renewals and a verify race for it.
    clock.now += 45_000;
    const now = clock.now;
    expect(() => a.check()).toThrow(/ran out/);
    await Promise.all([a.renew(), a.renew(), a.verify()]);
    // Assess: one write took it back; the token stays; a second reader is refused.
    expect(a.token).toBe(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/lease of reader a \(host elsewhere, pid 1\) ran out 15000 ms before it was renewed/);
    expect(lines[0]).toMatch(/no other reader had taken it, so this reader took it back \(token 1\)/);
    const b = new ConsumerLeaseHandle(store, T, 'c1', { holder: holder('b'), ttlMs: 30_000, now: () => now });
    await expect(b.acquire()).rejects.toBeInstanceOf(ConsumerLeaseHeldError);
    expect(() => a.check()).not.toThrow();
  });

  it('is lost for good when another reader took it meanwhile, with a message naming both and the delay', async () => {
    // Prepare
    const { store, lines, a, clock } = await heldLease();
    clock.now += 45_000;
    const now = clock.now;
    const b = new ConsumerLeaseHandle(store, T, 'c1', { holder: holder('b'), ttlMs: 30_000, now: () => now });
    await b.acquire();
    // Act
    const lost = await a.ensure().catch((e: unknown) => e);
    // Assess: a stops; b keeps the lease under the larger token.
    expect(lost).toBeInstanceOf(ConsumerLeaseLostError);
    expect((lost as Error).message).toMatch(
      /reader a \(host elsewhere, pid 1\)\) lost its lease to reader b \(host elsewhere, pid 1\) \(token 2\), which had run out 15000 ms before/,
    );
    await expect(a.verify()).rejects.toBe(lost);
    await expect(a.renew()).rejects.toBe(lost);
    expect(lines).toEqual([]);
    await b.verify();
    expect(b.token).toBe(2);
  });
});
