/** `varve compact`: compact the LSM tree of each bucket, with a progress bar on a terminal. */
import type { CompactionSummary } from '../../maintenance/compact.js';
import type { CliContext } from '../context.js';
import { formatSize } from '../output.js';
import { parsePositiveInt } from '../parse-flags.js';

interface CompactFlags {
  full?: boolean;
  partition?: string;
  bucket?: string;
  maxBytes?: string;
}

/** Registers `compact`. */
export function registerCompact({ program, catalog, out }: CliContext): void {
  program
    .command('compact')
    .description(
      'compact the LSM tree of each bucket (universal compaction, or everything into the top level with --full)',
    )
    .argument('<table>', 'DB.TABLE')
    .option('--full', 'full compaction: every sorted run of each bucket into the highest level')
    .option('--partition <spec>', 'only this partition, e.g. dt=2024-01-01,region=eu')
    .option('--bucket <n>', 'only this bucket number')
    .option('--max-bytes <n>', 'start no further bucket once this many input bytes were compacted')
    .action(async (name: string, o: CompactFlags) => {
      const { compactTable } = await import('../../maintenance/compact.js');
      const { parsePartitionSpec } = await import('../../schema/partition.js');
      const table = await catalog().getTable(name);
      const bar = await compactionBar();
      try {
        const summary = await compactTable(table, {
          full: Boolean(o.full),
          partition: o.partition ? parsePartitionSpec(o.partition) : undefined,
          bucket: o.bucket !== undefined ? parsePositiveInt('--bucket', o.bucket) : undefined,
          maxBytes: o.maxBytes !== undefined ? parsePositiveInt('--max-bytes', o.maxBytes) : undefined,
          onProgress: ({ done, total, result }) => bar.update(done, total, result.bytesIn),
        });
        bar.stop();
        out(formatCompactionSummary(table.name, summary));
      } catch (e) {
        bar.stop();
        throw e;
      }
    });
}

/** Buckets done and bytes read so far on stdout, when stdout is a terminal; else nothing. */
async function compactionBar(): Promise<{ update(done: number, total: number, bytesIn: number): void; stop(): void }> {
  const cliProgress = process.stdout.isTTY ? (await import('cli-progress')).default : undefined;
  const bar = cliProgress
    ? new cliProgress.SingleBar(
        {
          format: 'compacting [{bar}] {value}/{total} buckets | {mb} MB in',
          stream: process.stdout,
          clearOnComplete: true,
          hideCursor: true,
        },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
  let started = false;
  let bytes = 0;
  return {
    update(done, total, bytesIn) {
      bytes += bytesIn;
      if (!bar) return;
      if (!started) {
        bar.start(total, 0, { mb: '0.0' });
        started = true;
      }
      bar.update(done, { mb: (bytes / (1024 * 1024)).toFixed(1) });
    },
    stop() {
      if (started) bar?.stop();
    },
  };
}

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
