/** `varve expire`: expire old snapshots and delete their files. */
import type { ExpireSnapshotsResult } from '../../maintenance/expire-snapshots.js';
import type { CliContext } from '../context.js';
import { parseDurationFlag, parsePositiveInt } from '../parse-flags.js';

/** Registers `expire`. */
export function registerExpire({ program, catalog, out }: CliContext): void {
  program
    .command('expire')
    .description(
      'expire old snapshots (snapshot.num-retained.*, snapshot.time-retained; consumers and tags are honoured) and delete their files',
    )
    .argument('<table>', 'DB.TABLE')
    .option('--retain-min <n>', 'keep at least this many newest snapshots (default: snapshot.num-retained.min)')
    .option('--retain-max <n>', 'keep at most this many snapshots (default: snapshot.num-retained.max)')
    .option(
      '--older-than <duration>',
      'expire only snapshots replaced longer ago than this, e.g. 1 h, 30 min (default: snapshot.time-retained)',
    )
    .action(async (name: string, o: { retainMin?: string; retainMax?: string; olderThan?: string }) => {
      const { expireSnapshots } = await import('../../maintenance/expire-snapshots.js');
      const table = await catalog().getTable(name);
      const result = await expireSnapshots(table, {
        retainMin: o.retainMin !== undefined ? parsePositiveInt('--retain-min', o.retainMin) : undefined,
        retainMax: o.retainMax !== undefined ? parsePositiveInt('--retain-max', o.retainMax) : undefined,
        olderThanMs: o.olderThan !== undefined ? parseDurationFlag('--older-than', o.olderThan) : undefined,
      });
      out(formatExpirySummary(table.name, result));
    });
}

/** `[1,2,3,7]` → `1..3, 7`. */
function formatIds(ids: readonly number[]): string {
  const sorted = [...new Set(ids)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    parts.push(i === j ? `${sorted[i]}` : `${sorted[i]}..${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(', ');
}

/** What was expired and what remains. */
function expiredPart(table: string, r: ExpireSnapshotsResult): string[] {
  const parts: string[] = [];
  if (r.expired.length === 0 && r.changelogsExpired.length === 0) parts.push(`${table}: nothing expired`);
  else if (r.expired.length === 0) parts.push(`${table}: deleted ${r.deletedFiles} files`);
  else {
    const d = r.deleted;
    parts.push(
      `${table}: expired ${r.expired.length === 1 ? 'snapshot' : 'snapshots'} ${formatIds(r.expired)}, deleted ${r.deletedFiles} files ` +
        `(${d.dataFiles} data, ${d.changelogFiles} changelog, ${d.manifests} manifests, ${d.manifestLists} manifest lists)`,
    );
  }
  if (r.earliest !== undefined && r.latest !== undefined) {
    parts.push(
      r.earliest === r.latest ? `snapshot ${r.latest} remains` : `snapshots ${r.earliest}..${r.latest} remain`,
    );
  }
  return parts;
}

/** The one-line summary of an expiry run. */
function formatExpirySummary(table: string, r: ExpireSnapshotsResult): string {
  const parts = expiredPart(table, r);
  if (r.heldBy === 'consumer' && r.heldByConsumer) {
    parts.push(
      `held back by consumer ${r.heldByConsumer.id}, which still needs snapshot ${r.heldByConsumer.nextSnapshot}`,
    );
  } else if (r.heldBy === 'limit') parts.push('snapshot.expire.limit reached, run again for more');
  else if (r.heldBy === 'floor')
    parts.push('kept snapshots whose successor is less than a minute old (the expiry floor), run again later for more');
  if (r.changelogsWritten.length > 0)
    parts.push(`kept the changelogs of ${formatIds(r.changelogsWritten)} (changelog.* retention)`);
  if (r.changelogsExpired.length > 0) parts.push(`expired changelogs ${formatIds(r.changelogsExpired)}`);
  if (r.pendingFiles > 0) parts.push(`${r.pendingFiles} files wait for the grace period`);
  if (r.expiredConsumers.length > 0) parts.push(`removed idle consumers ${r.expiredConsumers.join(', ')}`);
  if (r.removedTombstones.length > 0)
    parts.push(
      `removed the tombstones of expired consumers ${r.removedTombstones.join(', ')} (consumer.tombstone-retention)`,
    );
  if (r.raced) parts.push('another expiry or a new consumer changed the table meanwhile, run again');
  if (r.consumersNeverExpire) {
    parts.push(
      'hint: consumers never expire on this table; set the option consumer.expiration-time (e.g. 7 d) so that abandoned ones stop holding snapshots',
    );
  }
  return parts.join('; ') + '\n';
}
