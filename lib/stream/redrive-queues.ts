/**
 * The varve queues that have a dead-letter queue (lib/stream/redrive.ts redrives them): apart, so
 * that the CLI declares `varve redrive` (its help lists them) without loading the SQS client.
 */
export const REDRIVE_QUEUES = ['commit', 'compaction', 'split', 'ingest'] as const;
export type RedriveQueue = (typeof REDRIVE_QUEUES)[number];
