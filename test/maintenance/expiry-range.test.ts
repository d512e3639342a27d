/** The range rules of expiry on synthetic timelines: counts, age of the successor, consumers, the limit. */
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../lib/errors.js';
import {
  expiryBound,
  resolveChangelogRetention,
  resolveRetention,
  type Retention,
} from '../../lib/maintenance/expiry-range.js';
import type { Snapshot } from '../../lib/snapshot/snapshot.js';
import type { Consumer } from '../../lib/snapshot/consumer.js';
import { newTable } from './expiry-fixtures.js';
import { EXPIRY_FLOOR_MS } from '../../lib/snapshot/commit-steps.js';

/** Snapshots `earliest..latest`, snapshot i committed at `times[i]` (default i * 1000). */
function timeline(times: Record<number, number> = {}) {
  return async (id: number) => ({ id, timeMillis: times[id] ?? id * 1000 }) as Snapshot;
}

const retention = (r: Partial<Retention> = {}): Retention => ({
  retainMin: 1,
  retainMax: Number.MAX_SAFE_INTEGER,
  timeRetainedMs: 0,
  limit: 1000,
  ...r,
});

const consumer = (id: string, nextSnapshot: number) => ({ id, nextSnapshot, lastUpdated: 0, etag: '' }) as Consumer;

describe('expiryBound', () => {
  const base = { earliest: 1, latest: 10, consumers: [] as Consumer[], now: 100_000, read: timeline() };

  it('keeps retain-min newest snapshots', async () => {
    expect(await expiryBound({ ...base, retention: retention({ retainMin: 3 }) })).toEqual({
      end: 8,
      heldBy: 'retain-min',
    });
  });

  it('expires a snapshot only when its successor is older than the time window', async () => {
    // Act: window 5.5 s (plus the floor) before now=10.5 s (plus the floor) → threshold 5 s;
    // snapshot 4's successor (5 s) is not older.
    const b = await expiryBound({
      ...base,
      now: 10_500 + EXPIRY_FLOOR_MS,
      retention: retention({ timeRetainedMs: 5_500 + EXPIRY_FLOOR_MS }),
    });
    // Assess: 1..3 go (successors at 2, 3, 4 s); 4 stays, it was the table's state until 5 s.
    expect(b).toEqual({ end: 4, heldBy: 'time' });
  });

  it('never expires a snapshot whose successor is younger than the floor, whatever the counts and time say', async () => {
    // Prepare: snapshots 1..10 at 1..10 s; now is a floor after 6.5 s
    const now = 6_500 + EXPIRY_FLOOR_MS;
    // Act: keep at most 1, with no time window
    const b = await expiryBound({ ...base, now, retention: retention({ retainMax: 1 }) });
    // Assess: 1..5 go (successors at 2..6 s); 6 stays, its successor (7 s) is younger than the floor
    expect(b).toEqual({ end: 6, heldBy: 'floor' });
    // And below retain-max's minimum too: snapshot 1 stays when its successor is young
    const young = await expiryBound({ ...base, now: 1_000 + EXPIRY_FLOOR_MS, retention: retention({ retainMax: 1 }) });
    expect(young).toEqual({ end: 1, heldBy: 'floor' });
  });

  it('retain-max expires old snapshots whatever their age', async () => {
    const b = await expiryBound({ ...base, retention: retention({ retainMax: 4, timeRetainedMs: 1_000_000 }) });
    expect(b).toEqual({ end: 7, heldBy: 'time' });
  });

  it('stops at the slowest live consumer', async () => {
    const b = await expiryBound({
      ...base,
      consumers: [consumer('fast', 9), consumer('slow', 4)],
      retention: retention(),
    });
    expect(b).toEqual({ end: 4, heldBy: 'consumer', consumer: { id: 'slow', nextSnapshot: 4 } });
  });

  it('expires at most `limit` per run and never goes below the earliest', async () => {
    expect(await expiryBound({ ...base, earliest: 3, retention: retention({ limit: 2 }) })).toEqual({
      end: 5,
      heldBy: 'limit',
    });
    const behind = await expiryBound({
      ...base,
      earliest: 6,
      consumers: [consumer('lost', 2)],
      retention: retention(),
    });
    expect(behind.end).toBe(6);
  });

  it('treats a successor that vanished (a concurrent expiry) as young', async () => {
    const read = async (id: number) => (id === 3 ? undefined : ({ id, timeMillis: 0 } as Snapshot));
    expect(await expiryBound({ ...base, read, retention: retention() })).toEqual({ end: 2, heldBy: 'time' });
  });
});

describe('resolveRetention', () => {
  it('takes the table options, overridden per run', async () => {
    const table = await newTable({ 'snapshot.num-retained.min': '4', 'snapshot.time-retained': '2 h' });
    expect(resolveRetention(table)).toMatchObject({ retainMin: 4, timeRetainedMs: 7_200_000, limit: 50 });
    expect(resolveRetention(table, { retainMin: 1, olderThanMs: 0, limit: 7 })).toMatchObject({
      retainMin: 1,
      timeRetainedMs: 0,
      limit: 7,
    });
  });

  it('keeps snapshot retention to the snapshot options; an explicit, larger changelog retention decouples changelogs', async () => {
    const table = await newTable({ 'changelog.time-retained': '1 d' });
    const snapshots = resolveRetention(table, { olderThanMs: 0 });
    expect(snapshots).toMatchObject({ timeRetainedMs: 0 });
    expect(resolveChangelogRetention(table, snapshots)).toMatchObject({ timeRetainedMs: 86_400_000, decoupled: true });
    // Unset changelog options follow the run's overrides: not decoupled.
    const plain = await newTable();
    const runOverride = resolveRetention(plain, { retainMin: 1 });
    expect(resolveChangelogRetention(plain, runOverride)).toMatchObject({ retainMin: 1, decoupled: false });
  });

  it('rejects contradicting or invalid values with a clear message', async () => {
    const table = await newTable();
    expect(() => resolveRetention(table, { retainMax: 5 })).toThrow(InvalidArgumentError);
    expect(() => resolveRetention(table, { retainMax: 5 })).toThrow(
      /retain-min \(10\) is larger than retain-max \(5\)/,
    );
    expect(() => resolveRetention(table, { retainMin: 0 })).toThrow(/retain-min must be a positive integer/);
    expect(() => resolveRetention(table, { olderThanMs: -1 })).toThrow(InvalidArgumentError);
  });
});
