/**
 * The AWS requests of cold Lambda invocations (each container's first) beside the warm average,
 * per function, from what the emulated containers recorded (e2e/emulator/lambda.ts). Issue 32's
 * budget for a cold ingest or commit invocation is asserted in-process request by request
 * (test/functions/cold-invocation-requests.test.ts); here the same rules are checked on the day's
 * traffic (brokenRules), whose invocations carry more batches, buckets and history than that
 * test's one: the day retires the idle containers twice (day.ts), so that some start cold on a
 * table with history.
 * Invocations with service faults in force (the fault round's S3 409/503 answers and throttles)
 * or that failed are reported but not judged: their retries legitimately repeat requests.
 */
import type { EmulatedFunction, InvocationCalls } from './emulator/lambda.js';
import type { RecordedCall } from './iam/requests.js';

/** What a request is: `S3:GetObject snapshot`, `DynamoDB:GetItem`, … */
function labelOf(c: RecordedCall): string {
  if (c.service !== 'S3') return `${c.service}:${c.command}`;
  const key = String(c.input.Key ?? c.input.Prefix ?? '');
  const kind =
    /\/snapshot\/LATEST$/.test(key) || /\/snapshot\/EARLIEST$/.test(key)
      ? 'hint'
      : /\/snapshot\/snapshot-\d+$/.test(key)
        ? 'snapshot'
        : /\/schema\/schema-\d+$/.test(key)
          ? 'schema'
          : /\/manifest\/manifest-list-/.test(key)
            ? 'manifest-list'
            : /\/manifest\//.test(key)
              ? 'manifest'
              : /\/bucket-\d+\//.test(key)
                ? 'data-file'
                : /\/pending\//.test(key)
                  ? 'pending'
                  : /\/commit\/identifier-/.test(key)
                    ? 'identifier'
                    : 'other';
  return `S3:${c.command} ${kind}`;
}

/** The snapshot id of a snapshot key, or undefined. */
function snapshotIdOf(c: RecordedCall): number | undefined {
  const m = /\/snapshot\/snapshot-(\d+)$/.exec(String(c.input.Key ?? ''));
  return m ? Number(m[1]) : undefined;
}

/**
 * HEADs of snapshots a cold lookup may make (lib/snapshot/snapshot-manager.ts): one of the id
 * after the LATEST hint's when the hint is current (the in-process budget); when it lags G
 * commits (warm committers do not write it), a gallop to the newest, about 2·log2(G) more, G read
 * off the ids the invocation checked; and up to 2 re-checks of the base of a commit attempt slower
 * than a second (lib/snapshot/commit-steps.ts).
 */
function snapshotHeadsAllowed(heads: readonly number[]): number {
  if (heads.length === 0) return 0;
  const span = Math.max(...heads) - Math.min(...heads) + 1;
  return 1 + (span > 1 ? 2 * Math.ceil(Math.log2(span)) : 0) + 2;
}

/**
 * Snapshots a cold invocation may read (GETs): the one a lagging LATEST hint names (the lookup of
 * the latest reads it), the latest, and those above the newest snapshot carrying a checkpoint of
 * the deduplication window (lib/table/window-checkpoint.ts): the compactions that landed since the
 * last group commit, at most one per bucket of the day's 4-bucket table (a bucket's compaction
 * job is not sent again while one waits). Without the checkpoint a cold container read every
 * snapshot of the window (14 on the day before 2026-12-07).
 */
const COLD_SNAPSHOT_READS = 6;

/**
 * The rules of issue 32 a cold ingest or commit invocation broke, empty when it kept them: no
 * LIST of a metadata folder once the table has a LATEST hint (a table nothing was committed to
 * yet has none, and only a listing tells it has no snapshot); each immutable metadata object read
 * at most once; the table opened with one catalog read, one schema read and one HEAD for a newer
 * schema; the latest snapshot found with the HEADs snapshotHeadsAllowed allows; at most
 * COLD_SNAPSHOT_READS snapshots read.
 */
function brokenRules(inv: InvocationCalls): string[] {
  const ok = inv.calls.filter((c) => c.error === undefined);
  const labels = ok.map(labelOf);
  const count = (label: string) => labels.filter((l) => l === label).length;
  const broken: string[] = [];
  const hintFound = count('S3:GetObject hint') > 0;
  const metadataLists = ok.filter(
    (c) =>
      c.service === 'S3' &&
      c.command.startsWith('List') &&
      /\/(snapshot|schema|manifest)\/?$/.test(String(c.input.Prefix ?? '')),
  );
  if (hintFound && metadataLists.length > 0)
    broken.push(`${metadataLists.length} LIST(s) of a metadata folder although the LATEST hint was there`);
  const reads = ok
    .filter((c, i) => c.command === 'GetObject' && /(schema|snapshot|manifest|manifest-list)$/.test(labels[i]))
    .map((c) => String(c.input.Key));
  const twice = [...new Set(reads.filter((k, i) => reads.indexOf(k) !== i))];
  if (twice.length > 0) broken.push(`read twice: ${twice.map((k) => k.replace(/^.*\//, '')).join(', ')}`);
  const open = { 'DynamoDB:GetItem': 1, 'S3:GetObject schema': 1, 'S3:HeadObject schema': 1 };
  for (const [label, most] of Object.entries(open))
    if (count(label) > most) broken.push(`${count(label)} × ${label} to open the table (budget ${most})`);
  const heads = ok
    .filter((_, i) => labels[i] === 'S3:HeadObject snapshot')
    .map(snapshotIdOf)
    .filter((id): id is number => id !== undefined);
  const allowed = snapshotHeadsAllowed(heads);
  if (heads.length > allowed)
    broken.push(
      `${heads.length} HEADs of snapshots (ids ${Math.min(...heads)}–${Math.max(...heads)}: budget ${allowed})`,
    );
  const snapshotReads = count('S3:GetObject snapshot');
  if (snapshotReads > COLD_SNAPSHOT_READS)
    broken.push(
      `${snapshotReads} snapshots read (budget ${COLD_SNAPSHOT_READS}: the deduplication window's checkpoint)`,
    );
  return broken;
}

/** Counts of each label, largest first: `3 S3:PutObject data-file, 1 SQS:SendMessage`. */
function breakdown(calls: readonly RecordedCall[]): string {
  const counts = new Map<string, number>();
  for (const l of calls.map(labelOf)) counts.set(l, (counts.get(l) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([l, n]) => `${n} ${l}`)
    .join(', ');
}

/**
 * One line per function on its cold and warm invocations' requests, and the failures of the
 * ingest and commit functions' cold invocations judged (see the file comment).
 */
export function coldRequestReport(functions: ReadonlyMap<string, EmulatedFunction>): {
  lines: string[];
  failures: string[];
} {
  const lines: string[] = [];
  const failures: string[] = [];
  for (const [fn, f] of functions) {
    const colds = f.stats.map((s) => s.cold).filter((c): c is InvocationCalls => c !== undefined);
    if (colds.length === 0) continue;
    const warmInvocations = f.stats.reduce((n, s) => n + Math.max(0, s.invocations - 1), 0);
    const warmCalls = f.stats.reduce((n, s) => n + s.warmCalls, 0);
    const judged = colds.filter((c) => c.ok && !c.faulted);
    const counts = judged.map((c) => c.calls.length).sort((a, b) => a - b);
    const most = judged.reduce<InvocationCalls | undefined>(
      (m, c) => (m === undefined || c.calls.length > m.calls.length ? c : m),
      undefined,
    );
    lines.push(
      `${fn}: requests per cold invocation (${colds.length} containers, ${judged.length} without faults): ` +
        (judged.length
          ? `median ${counts[Math.floor(counts.length / 2)]}, max ${counts[counts.length - 1]} (${breakdown(most!.calls)})`
          : 'none without faults') +
        `; warm: ${(warmCalls / Math.max(1, warmInvocations)).toFixed(1)} per invocation (${warmInvocations})`,
    );
    // Each judged cold invocation of the ingest and commit functions (the budget's), not only the largest.
    if (/Ingest|Commit/.test(fn) && judged.length > 1)
      for (const c of judged) lines.push(`${fn}:   a cold invocation: ${c.calls.length} (${breakdown(c.calls)})`);
    if (!/Ingest|Commit/.test(fn)) continue;
    for (const c of judged) {
      const broken = brokenRules(c);
      if (broken.length > 0)
        failures.push(`${fn}: a cold invocation (${c.calls.length} requests) ${broken.join('; ')}`);
    }
  }
  return { lines, failures };
}
