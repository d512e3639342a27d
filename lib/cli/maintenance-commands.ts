/**
 * The maintenance commands of the CLI. Each command is registered by its own function below, so
 * that maintenance actions (compaction, expiry, …) stay apart.
 */
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import { InvalidArgumentError } from '../errors';
import { compactTable, type CompactionSummary } from '../maintenance/compact';
import { openCatalog, warehouseUri } from './context';
import { parsePositiveInt, type GlobalOptions } from './parse-flags';

type Out = (text: string) => void;

/** Registers the maintenance commands on `program`; `globals()` gives the global flags, `out` prints. */
export function registerMaintenanceCommands(program: Command, globals: () => GlobalOptions, out: Out): void {
  registerCompactCommand(program, globals, out);
}

// ---------------------------------------------------------------------------------------------
// varve compact

/** `{ k: v }` from `k=v,k2=v2`. */
function parsePartitionSpec(text: string): Record<string, string> {
  const spec: Record<string, string> = {};
  for (const part of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const i = part.indexOf('=');
    if (i <= 0) throw new InvalidArgumentError(`--partition "${text}" must look like key=value[,key=value…], e.g. dt=2024-01-01,region=eu`);
    spec[part.slice(0, i).trim()] = part.slice(i + 1).trim();
  }
  return spec;
}

function mb(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** The one-line summary of a compaction run. */
export function formatCompactionSummary(table: string, s: CompactionSummary): string {
  if (s.bucketsCompacted === 0 && s.conflicts === 0 && s.remainingBuckets === 0) {
    return `${table}: nothing to compact (${s.bucketsChecked} buckets checked)\n`;
  }
  const parts = [
    `${table}: compacted ${s.bucketsCompacted} of ${s.bucketsChecked} buckets`,
    `${s.filesIn} files (${mb(s.bytesIn)}) -> ${s.filesOut} files (${mb(s.bytesOut)}), ${s.upgradedFiles} upgraded without rewrite`,
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
