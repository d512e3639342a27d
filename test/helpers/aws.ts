import { randomUUID } from 'node:crypto';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';

/** True when an AWS endpoint (moto in tests) is configured. Under VARVE_REQUIRE_MOTO=1 its absence is a failure. */
export function awsAvailable(): boolean {
  if (process.env.AWS_ENDPOINT_URL) return true;
  if (process.env.VARVE_REQUIRE_MOTO === '1') throw new Error('VARVE_REQUIRE_MOTO=1 but AWS_ENDPOINT_URL is not set');
  return false;
}

/** A fresh, uniquely named bucket on the configured endpoint. */
export async function freshBucket(prefix = 'varve-test'): Promise<string> {
  const name = `${prefix}-${randomUUID().slice(0, 8)}`;
  const s3 = new S3Client({ forcePathStyle: true });
  await s3.send(new CreateBucketCommand({ Bucket: name }));
  s3.destroy();
  return name;
}
