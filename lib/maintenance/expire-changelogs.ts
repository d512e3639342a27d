/**
 * Changelog expiry (Paimon's ExpireChangelogImpl): removes long-lived changelogs
 * (`changelog/changelog-<id>`, lib/snapshot/changelog.ts) past `changelog.num-retained.*` /
 * `changelog.time-retained`, oldest first, never one a live consumer still needs, at most
 * `snapshot.expire.limit` per run, and then the objects only they kept: the manifest lists,
 * manifests, data files and changelog files of each, minus what a retained changelog, the
 * earliest snapshot, a tag or the Iceberg export still references. A file an expired changelog
 * kept and a live snapshot uses is live in the earliest snapshot (a file dead before the earliest
 * never comes back, and manifests are shared only forward), so the earliest snapshot is the one
 * snapshot to check. Runs through an expiry journal like snapshot expiry (expiry-journal.ts):
 * changelog files first, then after the grace period the objects they kept.
 */
import { icebergReferencedKeys } from '../iceberg/iceberg-references.js';
import { LruManifestCache } from '../manifest/manifest-file.js';
import { tableKey } from '../manifest/table-paths.js';
import {
  listChangelogIds,
  snapshotOrChangelog,
  tryReadChangelog,
  type LongLivedChangelog,
} from '../snapshot/changelog.js';
import { listConsumers, type Consumer } from '../snapshot/consumer.js';
import { listTags } from '../snapshot/tags.js';
import type { Table } from '../table/table.js';
import { applyJournal, journalKey, writeJournal, type ExpiryJournal, type JournalOutcome } from './expiry-journal.js';
import { expiryBound, type ChangelogRetention } from './expiry-range.js';
import { addReferences, changelogKeys, snapshotReferences } from './snapshot-references.js';

/** What one changelog expiry did. */
export interface ExpireChangelogsResult {
  /** The journal outcome (changelog ids in `changelogs`), or undefined when nothing expired. */
  outcome?: JournalOutcome;
  /** True when a snapshot expiry moved the earliest snapshot meanwhile: run again. */
  raced: boolean;
}

/** Every long-lived changelog below the earliest snapshot, ascending (absent ones skipped). */
async function readChangelogs(table: Table, ids: readonly number[]): Promise<LongLivedChangelog[]> {
  const out: LongLivedChangelog[] = [];
  for (const id of ids) {
    const c = await tryReadChangelog(table.store, table.path, id);
    if (c !== undefined) out.push(c);
  }
  return out;
}

/**
 * The end (exclusive) up to which changelogs expire now by `retention`, counting from the latest
 * snapshot. `changelogs` are the changelog ids below `earliestSnapshot`; the time rule reads the
 * successor of each, and across a gap in the ids (snapshots expired while changelogs were not
 * kept) the next id present, which is younger, so the rule only keeps more.
 */
export async function changelogBound(
  table: Table,
  args: {
    changelogs: readonly number[];
    earliestSnapshot: number;
    latest: number;
    retention: ChangelogRetention;
    now: number;
    consumers: readonly Consumer[];
  },
): Promise<number> {
  const read = async (id: number) => {
    const found = await snapshotOrChangelog(table.snapshots, table.store, table.path, id);
    if (found !== undefined) return found;
    const next =
      args.changelogs.find((c) => c > id) ?? (id < args.earliestSnapshot ? args.earliestSnapshot : undefined);
    return next === undefined ? undefined : snapshotOrChangelog(table.snapshots, table.store, table.path, next);
  };
  const earliest = args.changelogs[0] ?? args.earliestSnapshot;
  return (
    await expiryBound({
      earliest,
      latest: args.latest,
      retention: args.retention,
      now: args.now,
      consumers: args.consumers,
      read,
    })
  ).end;
}

/** Expires long-lived changelogs of `table` by `retention` (see the file comment). */
export async function expireChangelogs(
  table: Table,
  retention: ChangelogRetention,
  opts: { now: number; graceMs: number },
): Promise<ExpireChangelogsResult> {
  const sEarliest = await table.snapshots.earliestId();
  const latest = await table.snapshots.latestId();
  if (sEarliest === undefined || latest === undefined) return { raced: false };
  // A changelog at or above the earliest snapshot is being written by a running snapshot expiry.
  const ids = (await listChangelogIds(table.store, table.path)).filter((id) => id < sEarliest);
  if (ids.length === 0) return { raced: false };
  const consumers = await listConsumers(table.store, table.path);
  const end = Math.min(
    sEarliest,
    await changelogBound(table, {
      changelogs: ids,
      earliestSnapshot: sEarliest,
      latest,
      retention,
      now: opts.now,
      consumers,
    }),
  );
  const all = await readChangelogs(table, ids);
  const expiring = all.filter((c) => c.id < end);
  if (expiring.length === 0) return { raced: false };

  // What stays referenced: retained changelogs, the earliest snapshot, tags, the Iceberg export.
  const keep = new Set<string>();
  for (const c of all) if (c.id >= end) for (const k of changelogKeys(table, c)) keep.add(k);
  const cache = new LruManifestCache();
  const earliest = await table.snapshots.tryRead(sEarliest);
  if (earliest === undefined) return { raced: true };
  addReferences(keep, await snapshotReferences(table, earliest, cache));
  const tags = await listTags(table.store, table.path);
  for (const { tag } of tags) addReferences(keep, await snapshotReferences(table, tag, cache));
  for (const k of await icebergReferencedKeys(table)) keep.add(k);

  const files = new Set<string>();
  const lists = new Set<string>();
  const manifests = new Set<string>();
  for (const c of expiring) {
    for (const k of c.retained.files) files.add(tableKey(table.path, k));
    for (const k of c.retained.manifestLists) lists.add(tableKey(table.path, k));
    for (const k of c.retained.manifests) manifests.add(tableKey(table.path, k));
  }
  const live = (set: Set<string>) => [...set].filter((k) => !keep.has(k));
  // A snapshot expiry that ran meanwhile may have written changelogs this plan did not see.
  if ((await table.snapshots.earliestId()) !== sEarliest) return { raced: true };
  // A consumer registered since the bound was computed may need part of the range: leave it.
  const before = new Map(consumers.map((c) => [c.id, c.nextSnapshot]));
  const latecomer = (await listConsumers(table.store, table.path)).find(
    (c) => c.nextSnapshot < end && c.nextSnapshot < (before.get(c.id) ?? Infinity),
  );
  if (latecomer) return { raced: true };

  const dataAndChangelog = live(files);
  const journal: ExpiryJournal = {
    version: 1,
    kind: 'changelog',
    from: expiring[0].id,
    end: expiring[expiring.length - 1].id + 1,
    createdAt: opts.now,
    deleteAfter: opts.now + Math.max(0, opts.graceMs),
    tags: Object.fromEntries(tags.map(({ name, tag }) => [name, tag.id])),
    dataFiles: dataAndChangelog.filter((k) => !isChangelogFile(k)),
    changelogFiles: dataAndChangelog.filter(isChangelogFile),
    manifests: live(manifests),
    manifestLists: live(lists),
  };
  if (!(await writeJournal(table, journal))) return { raced: true };
  return {
    outcome: await applyJournal(table, journalKey(table.path, journal.end, 'changelog'), journal, opts.now),
    raced: false,
  };
}

/** A changelog file (`[partition/]bucket-<n>/changelog-…`), as opposed to a data file. */
function isChangelogFile(key: string): boolean {
  return /(^|\/)bucket-\d+\/changelog-[^/]*$/.test(key);
}
