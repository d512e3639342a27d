/**
 * Least-privilege S3 statements on one key prefix of the warehouse bucket. Every varve function
 * gets its object access through these, so no policy ever names a wildcard action or the whole
 * bucket.
 */
import { PolicyStatement, type IGrantable } from 'aws-cdk-lib/aws-iam';
import type { IBucket } from 'aws-cdk-lib/aws-s3';

/** The object actions varve functions use; each one named, never `s3:*`. */
export type ObjectAction = 's3:GetObject' | 's3:PutObject' | 's3:DeleteObject' | 's3:AbortMultipartUpload';

/** Grants the given object actions on every key under `prefix/` (a folder, without the trailing slash). */
export function grantObjects(grantee: IGrantable, bucket: IBucket, prefix: string, actions: ObjectAction[]): void {
  grantObjectPattern(grantee, bucket, `${prefix}/*`, actions);
}

/** Grants the given object actions on keys matching `pattern` exactly (may end in `*`). */
export function grantObjectPattern(
  grantee: IGrantable,
  bucket: IBucket,
  pattern: string,
  actions: ObjectAction[],
): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({ actions, resources: [bucket.arnForObjects(pattern)] }),
  );
}

/**
 * Grants s3:ListBucket for listings whose `prefix` parameter lies under `prefix/` (a listing of
 * another table is denied), and for requests that carry no prefix at all. The second half is what
 * S3 checks when a GET or HEAD names a key that does not exist: it answers 404 only to a caller
 * that may s3:ListBucket the bucket, evaluated without an s3:prefix, and 403 AccessDenied
 * otherwise, which would turn every existence probe (the next snapshot, a consumer file, a hint)
 * into a hard error. Its cost: a ListObjects without any prefix would list the bucket's key names
 * (never their contents); varve's store always sends a prefix.
 */
export function grantListUnder(grantee: IGrantable, bucket: IBucket, prefix: string): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      actions: ['s3:ListBucket'],
      resources: [bucket.bucketArn],
      conditions: { StringLikeIfExists: { 's3:prefix': [`${prefix}/*`] } },
    }),
  );
}

/**
 * The parts of a table a function may delete in: `data` (data and changelog files under
 * `[partition/]bucket-<n>/`), `manifest` (`manifest/`), `pending` (the registrations of queued
 * commit messages' files, removed once committed), `compaction` (a bucket's "job queued" marker,
 * removed by the job when it starts), or `all` (the whole table, for expiry,
 * the one function that removes snapshots and everything they alone referenced).
 */
export type TableArea = 'data' | 'manifest' | 'pending' | 'compaction' | 'all';

const AREA_PATTERNS: Record<TableArea, string[]> = {
  data: ['*bucket-*/*'],
  manifest: ['manifest/*'],
  pending: ['pending/*'],
  compaction: ['compaction/*'],
  all: ['*'],
};

/** Grants s3:DeleteObject on the given areas of the table at `tablePrefix`, and nowhere else. */
export function grantTableDeletes(grantee: IGrantable, bucket: IBucket, tablePrefix: string, areas: TableArea[]): void {
  const resources = areas.flatMap((a) => AREA_PATTERNS[a]).map((p) => bucket.arnForObjects(`${tablePrefix}/${p}`));
  grantee.grantPrincipal.addToPrincipalPolicy(new PolicyStatement({ actions: ['s3:DeleteObject'], resources }));
}
