/**
 * The environment contract of the varve functions (docs/AWS.md, "The environment contract"): the
 * warehouse, the catalog, the table, and where a writer's commits, compaction jobs and commit
 * events go. Read per invocation, so a test can hand each handler its own environment.
 */
import { InvalidArgumentError } from '../errors.js';
import type { CommitMode } from '../aws-contract.js';

/** The process environment, or a test's stand-in for it. */
export type Env = Readonly<Record<string, string | undefined>>;

/** The values of `names` in `env`; throws InvalidArgumentError naming every one that is missing. */
export function requireEnv<K extends string>(env: Env, names: readonly K[], who: string): Record<K, string> {
  const missing = names.filter((n) => !env[n]);
  if (missing.length > 0) {
    throw new InvalidArgumentError(
      `the ${who} function needs ${missing.join(', ')} in its environment (the varve CDK constructs set them; see docs/AWS.md, "The environment contract")`,
    );
  }
  return Object.fromEntries(names.map((n) => [n, env[n]!])) as Record<K, string>;
}

/** Where a writer's commits, compaction jobs and commit events go. */
export interface WriterSettings {
  mode: CommitMode;
  /** The table's commit FIFO queue (queue mode). */
  commitQueueUrl?: string;
  /** The table's compaction FIFO queue; without it no compaction job is enqueued. */
  compactQueueUrl?: string;
  /** The bus `Snapshot Committed` events go to; without it none is put. */
  eventBusName?: string;
}

/**
 * A writer's settings from `<prefix>COMMIT_MODE`, `<prefix>COMMIT_QUEUE_URL`,
 * `<prefix>COMPACT_QUEUE_URL` and `<prefix>EVENT_BUS_NAME` (prefix `VARVE_` for ingest,
 * `VARVE_SINK_` for a reader's table sink).
 */
export function writerSettings(env: Env, prefix = 'VARVE_'): WriterSettings {
  const mode = env[`${prefix}COMMIT_MODE`] ?? 'direct';
  if (mode !== 'direct' && mode !== 'queue') {
    throw new InvalidArgumentError(
      `${prefix}COMMIT_MODE is "${mode}": use "queue" (group commit through the commit queue) or "direct"`,
    );
  }
  const commitQueueUrl = env[`${prefix}COMMIT_QUEUE_URL`] || undefined;
  if (mode === 'queue' && !commitQueueUrl) {
    throw new InvalidArgumentError(
      `${prefix}COMMIT_MODE is "queue" but ${prefix}COMMIT_QUEUE_URL is not set: give the commit FIFO queue's URL, or use direct mode`,
    );
  }
  return {
    mode,
    commitQueueUrl,
    compactQueueUrl: env[`${prefix}COMPACT_QUEUE_URL`] || undefined,
    eventBusName: env[`${prefix}EVENT_BUS_NAME`] || undefined,
  };
}
