/**
 * The maintenance commands of the CLI. Each command is registered by its own function below, so
 * that maintenance actions (compaction, expiry, …) stay apart.
 */
import { parsePartitionSpec } from '../schema/partition.js';
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import { CorruptMetadataError, InvalidArgumentError } from '../errors.js';
import { compactTable, type CompactionSummary } from '../maintenance/compact.js';
import { openCatalog, warehouseUri } from './context.js';
import { formatSize } from './output.js';
import { parseDurationFlag, parsePositiveInt, type GlobalOptions } from './parse-flags.js';
// Expiry and orphan cleanup (registerExpiryCommands, at the end of this file).
import { expireSnapshots, type ExpireSnapshotsResult } from '../maintenance/expire-snapshots.js';
import { removeOrphanFiles, type RemoveOrphansResult } from '../maintenance/remove-orphans.js';
import { verifyTable, type TableVerification } from '../maintenance/verify-table.js';

type Out = (text: string) => void;

/** Registers the maintenance commands on `program`; `globals()` gives the global flags, `out` prints. */
export function registerMaintenanceCommands(program: Command, globals: () => GlobalOptions, out: Out): void {
  registerCompactCommand(program, globals, out);
}

// ---------------------------------------------------------------------------------------------
// varve compact

/** The one-line summary of a compaction run. */
export function formatCompactionSummary(table: string, s: CompactionSummary): string {
  if (s.bucketsCompacted === 0 && s.conflicts === 0 && s.remainingBuckets === 0) {
    return `${table}: nothing to compact (${s.bucketsChecked} buckets checked)\n`;
  }
  const parts = [
    `${table}: compacted ${s.bucketsCompacted} of ${s.bucketsChecked} buckets`,
    `${s.filesIn} files (${formatSize(s.bytesIn)}) -> ${s.filesOut} files (${formatSize(s.bytesOut)}), ${s.upgradedFiles} upgraded without rewrite`,
  ];
  if (s.changelogRows > 0) parts.push(`${s.changelogRows} changelog rows in ${s.changelogFiles} files`);
  if (s.snapshots.length > 0) {
    const first = s.snapshots[0];
    const last = s.snapshots[s.snapshots.length - 1];
    parts.push(first === last ? `snapshot ${first}` : `snapshots ${first}..${last}`);
  }
  if (s.remainingBuckets > 0) parts.push(`${s.remainingBuckets} buckets left for the next run (--max-bytes reached)`);
  if (s.conflicts > 0) parts.push(`${s.conflicts} buckets skipped: other compactions kept changing them, run again`);
  return parts.join(', ') + '\n';
}

function registerCompactCommand(program: Command, globals: () => GlobalOptions, out: Out): void {
  program
    .command('compact')
    .description('compact the LSM tree of each bucket (universal compaction, or everything into the top level with --full)')
    .argument('<table>', 'DB.TABLE')
    .option('--full', 'full compaction: every sorted run of each bucket into the highest level')
    .option('--partition <spec>', 'only this partition, e.g. dt=2024-01-01,region=eu')
    .option('--bucket <n>', 'only this bucket number')
    .option('--max-bytes <n>', 'start no further bucket once this many input bytes were compacted')
    .action(async (name: string, o: { full?: boolean; partition?: string; bucket?: string; maxBytes?: string }) => {
      const table = await openCatalog(warehouseUri(globals().warehouse)).getTable(name);
      const tty = Boolean(process.stdout.isTTY);
      const bar = tty
        ? new cliProgress.SingleBar(
            { format: 'compacting [{bar}] {value}/{total} buckets | {mb} MB in', stream: process.stdout, clearOnComplete: true, hideCursor: true },
            cliProgress.Presets.shades_classic,
          )
        : undefined;
      let started = false;
      let bytes = 0;
      try {
        const summary = await compactTable(table, {
          full: Boolean(o.full),
          partition: o.partition ? parsePartitionSpec(o.partition) : undefined,
          bucket: o.bucket !== undefined ? parsePositiveInt('--bucket', o.bucket) : undefined,
          maxBytes: o.maxBytes !== undefined ? parsePositiveInt('--max-bytes', o.maxBytes) : undefined,
          onProgress: ({ done, total, result }) => {
            bytes += result.bytesIn;
            if (!bar) return;
            if (!started) {
              bar.start(total, 0, { mb: '0.0' });
              started = true;
            }
            bar.update(done, { mb: (bytes / (1024 * 1024)).toFixed(1) });
          },
        });
        if (started) bar?.stop();
        out(formatCompactionSummary(table.name, summary));
      } catch (e) {
        if (started) bar?.stop();
        throw e;
      }
    });
}

// ---------------------------------------------------------------------------------------------
// varve expire, varve remove-orphans

/** Registers `expire` and `remove-orphans` on `program`; `globals()` gives the global flags, `out` prints. */
export function registerExpiryCommands(program: Command, globals: () => GlobalOptions, out: Out): void {
  program
    .command('expire')
    .description('expire old snapshots (snapshot.num-retained.*, snapshot.time-retained; consumers and tags are honoured) and delete their files')
    .argument('<table>', 'DB.TABLE')
    .option('--retain-min <n>', 'keep at least this many newest snapshots (default: snapshot.num-retained.min)')
    .option('--retain-max <n>', 'keep at most this many snapshots (default: snapshot.num-retained.max)')
    .option('--older-than <duration>', 'expire only snapshots replaced longer ago than this, e.g. 1 h, 30 min (default: snapshot.time-retained)')
    .action(async (name: string, o: { retainMin?: string; retainMax?: string; olderThan?: string }) => {
      const table = await openCatalog(warehouseUri(globals().warehouse)).getTable(name);
      const result = await expireSnapshots(table, {
        retainMin: o.retainMin !== undefined ? parsePositiveInt('--retain-min', o.retainMin) : undefined,
        retainMax: o.retainMax !== undefined ? parsePositiveInt('--retain-max', o.retainMax) : undefined,
        olderThanMs: o.olderThan !== undefined ? parseDurationFlag('--older-than', o.olderThan) : undefined,
      });
      out(formatExpirySummary(table.name, result));
    });
  program
    .command('verify')
    .description('check that every snapshot and tag of a table references only files that exist and read back (exit 1 when not)')
    .argument('<table>', 'DB.TABLE')
    .action(async (name: string) => {
      const table = await openCatalog(warehouseUri(globals().warehouse)).getTable(name);
      const result = await verifyTable(table);
      out(formatVerification(table.name, result));
      // The problems are printed above; the error makes the exit code say so.
      if (!result.ok) throw new CorruptMetadataError(`${table.name} has ${result.problems.length} problem(s), listed above; restore the missing files, or roll back to a snapshot that verifies`);
    });
  program
    .command('remove-orphans')
    .description('delete files no snapshot, tag or consumer references (left by crashed commits), older than a safety window')
    .argument('<table>', 'DB.TABLE')
    .option('--older-than <duration>', 'only files older than this, e.g. 1 d, 6 h (default: orphan-files.older-than, 1 d)')
    .option('--dry-run', 'list the files that would be deleted, delete nothing')
    .option('--max-keys <n>', 'list at most n keys, resuming after the last key the previous bounded run listed (the scheduled scan on AWS does the same); default: the whole table at once')
    .option('--journal', 'look only at the files of expired pending registrations (what the 15-minute expiry run on AWS does); no listing of the table')
    .action(async (name: string, o: { olderThan?: string; dryRun?: boolean; maxKeys?: string; journal?: boolean }) => {
      if (o.maxKeys !== undefined && o.journal) throw new InvalidArgumentError('--max-keys and --journal are two different modes: give one of them');
      let maxKeys: number | undefined;
      if (o.maxKeys !== undefined) {
        maxKeys = Number(o.maxKeys);
        if (!Number.isInteger(maxKeys) || maxKeys < 1) throw new InvalidArgumentError(`--max-keys must be a whole number of 1 or more, got '${o.maxKeys}'`);
      }
      const table = await openCatalog(warehouseUri(globals().warehouse)).getTable(name);
      const result = await removeOrphanFiles(table, {
        olderThanMs: o.olderThan !== undefined ? parseDurationFlag('--older-than', o.olderThan) : undefined,
        dryRun: Boolean(o.dryRun),
        mode: o.journal ? 'journal' : maxKeys !== undefined ? 'scan' : 'full',
        maxKeys,
      });
      out(formatOrphanSummary(table.name, result));
    });
}

/** `90000` → `1.5 min`: the largest unit that keeps the number readable. */
function formatDuration(ms: number): string {
  const units: Array<[number, string]> = [[86_400_000, 'd'], [3_600_000, 'h'], [60_000, 'min'], [1000, 's']];
  for (const [size, unit] of units) if (ms >= size) return `${+(ms / size).toFixed(1)} ${unit}`;
  return `${ms} ms`;
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

/** The one-line summary of an expiry run. */
function formatExpirySummary(table: string, r: ExpireSnapshotsResult): string {
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
    parts.push(r.earliest === r.latest ? `snapshot ${r.latest} remains` : `snapshots ${r.earliest}..${r.latest} remain`);
  }
  if (r.heldBy === 'consumer' && r.heldByConsumer) {
    parts.push(`held back by consumer ${r.heldByConsumer.id}, which still needs snapshot ${r.heldByConsumer.nextSnapshot}`);
  } else if (r.heldBy === 'limit') parts.push('snapshot.expire.limit reached, run again for more');
  if (r.changelogsWritten.length > 0) parts.push(`kept the changelogs of ${formatIds(r.changelogsWritten)} (changelog.* retention)`);
  if (r.changelogsExpired.length > 0) parts.push(`expired changelogs ${formatIds(r.changelogsExpired)}`);
  if (r.pendingFiles > 0) parts.push(`${r.pendingFiles} files wait for the grace period`);
  if (r.expiredConsumers.length > 0) parts.push(`removed idle consumers ${r.expiredConsumers.join(', ')}`);
  if (r.removedTombstones.length > 0) parts.push(`removed the tombstones of expired consumers ${r.removedTombstones.join(', ')} (consumer.tombstone-retention)`);
  if (r.raced) parts.push('another expiry or a new consumer changed the table meanwhile, run again');
  if (r.consumersNeverExpire) {
    parts.push('hint: consumers never expire on this table; set the option consumer.expiration-time (e.g. 7 d) so that abandoned ones stop holding snapshots');
  }
  return parts.join('; ') + '\n';
}

/** The summary of an orphan cleanup: one line, then with a dry run one line per file. */
function formatOrphanSummary(table: string, r: RemoveOrphansResult): string {
  const verb = r.dryRun ? 'would remove' : 'removed';
  const recent = r.tooRecent > 0 ? `; ${r.tooRecent} newer unreferenced files left alone` : '';
  let scope = '';
  if (r.mode === 'journal') scope = `; looked at ${r.listed} files of expired pending registrations`;
  else if (r.mode === 'scan') {
    scope = r.cycleComplete
      ? `; listed ${r.listed} keys, the scan reached the end of the table (${r.cycleListed} keys this cycle)`
      : `; listed ${r.listed} keys, run again to resume after ${r.resumeAfter}`;
  }
  let text = `${table}: ${verb} ${r.orphans.length} orphan files (${formatSize(r.bytes)}) older than ${formatDuration(r.olderThanMs)}${recent}${scope}\n`;
  if (r.dryRun) {
    for (const o of r.orphans) text += `  ${o.kind}\t${o.key}\t${formatSize(o.size)}\t${new Date(o.lastModified).toISOString()}\n`;
  }
  return text;
}

/** The `varve verify` report. */
function formatVerification(table: string, r: TableVerification): string {
  const head = `${table}: ${r.snapshots.length} snapshot(s)${r.tags.length ? `, ${r.tags.length} tag(s)` : ''}, ${r.checkedReferences} reference(s) checked: `;
  if (r.ok) return `${head}ok\n`;
  return `${head}${r.problems.length} problem(s)\n` + r.problems.map((p) => `  ${p.owner}: ${p.problem}${p.key ? ` (${p.key})` : ''}\n`).join('');
}
