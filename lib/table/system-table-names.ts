/**
 * The names of the system tables (lib/table/system-tables.ts reads them): apart, so that the CLI
 * declares `varve sys` (its help lists them) without loading the code that reads them.
 */
export const SYSTEM_TABLES = [
  'snapshots',
  'changelogs',
  'files',
  'manifests',
  'schemas',
  'options',
  'tags',
  'buckets',
  'partitions',
  'statistics',
  'consumers',
] as const;
export type SystemTableName = (typeof SYSTEM_TABLES)[number];
