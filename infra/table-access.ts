/**
 * Least-privilege S3 statements on one key prefix of the warehouse bucket. Every varve function
 * gets its object access through these, so no policy ever names a wildcard action or the whole
 * bucket.
 */
import { PolicyStatement, type IGrantable } from 'aws-cdk-lib/aws-iam';
import type { IBucket } from 'aws-cdk-lib/aws-s3';

/** The object actions varve functions use; each one named, never `s3:*`. */
export type ObjectAction = 's3:GetObject' | 's3:PutObject' | 's3:DeleteObject';

/** Grants the given object actions on every key under `prefix/` (a folder, without the trailing slash). */
export function grantObjects(grantee: IGrantable, bucket: IBucket, prefix: string, actions: ObjectAction[]): void {
  grantObjectPattern(grantee, bucket, `${prefix}/*`, actions);
}

/** Grants the given object actions on keys matching `pattern` exactly (may end in `*`). */
export function grantObjectPattern(grantee: IGrantable, bucket: IBucket, pattern: string, actions: ObjectAction[]): void {
  grantee.grantPrincipal.addToPrincipalPolicy(new PolicyStatement({ actions, resources: [bucket.arnForObjects(pattern)] }));
}

/**
 * Grants s3:ListBucket, but only for listings whose `prefix` parameter lies under `prefix/`
 * (a listing without a prefix, or of another table, is denied).
 */
export function grantListUnder(grantee: IGrantable, bucket: IBucket, prefix: string): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      actions: ['s3:ListBucket'],
      resources: [bucket.bucketArn],
      conditions: { StringLike: { 's3:prefix': [`${prefix}/*`] } },
    }),
  );
}
