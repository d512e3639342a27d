/**
 * Reading AWS SDK errors. Conditional-write failures (412, 409) are not modeled exception classes
 * in client-s3, so errors are classified by HTTP status and `name`, never by `instanceof`
 * (reference/aws-semantics.md §1.2).
 */

interface SdkErrorShape {
  name?: unknown;
  code?: unknown;
  $metadata?: { httpStatusCode?: unknown; attempts?: unknown };
  $retryable?: unknown;
}

function shape(e: unknown): SdkErrorShape {
  return typeof e === 'object' && e !== null ? (e as SdkErrorShape) : {};
}

/** The HTTP status of an SDK error, or undefined when the request got no HTTP answer. */
export function s3Status(e: unknown): number | undefined {
  const status = shape(e).$metadata?.httpStatusCode;
  return typeof status === 'number' ? status : undefined;
}

/** The error's `name` (S3's error code, e.g. `PreconditionFailed`, `NoSuchKey`, `SlowDown`). */
export function s3ErrorName(e: unknown): string {
  const name = shape(e).name;
  return typeof name === 'string' ? name : 'UnknownError';
}

/** How many HTTP attempts the SDK made for this request (its own retries included). */
export function s3Attempts(e: unknown): number {
  const attempts = shape(e).$metadata?.attempts;
  return typeof attempts === 'number' ? attempts : 1;
}

/** S3 error codes that mean "slow down", whatever status they come with. */
const THROTTLING = new Set([
  'SlowDown',
  'Throttling',
  'ThrottlingException',
  'ThrottledException',
  'RequestThrottled',
  'RequestLimitExceeded',
  'TooManyRequestsException',
  'RequestTimeout',
]);

/** Names and errno codes of requests that never got an HTTP answer. */
const NETWORK = new Set([
  'TimeoutError',
  'RequestTimeout',
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/** True when the error may heal by itself: a 5xx, throttling, or a network failure. */
export function s3IsTransient(e: unknown): boolean {
  const status = s3Status(e);
  const name = s3ErrorName(e);
  if (THROTTLING.has(name)) return true;
  if (status !== undefined) return status >= 500 || status === 429;
  const code = shape(e).code;
  return NETWORK.has(name) || (typeof code === 'string' && NETWORK.has(code)) || shape(e).$retryable !== undefined;
}

/** True for 403-style errors: wrong credentials, signature or bucket policy. */
export function s3IsAccessDenied(e: unknown): boolean {
  const name = s3ErrorName(e);
  return (
    s3Status(e) === 403 ||
    name === 'AccessDenied' ||
    name === 'InvalidAccessKeyId' ||
    name === 'SignatureDoesNotMatch' ||
    name === 'CredentialsProviderError'
  );
}

/** True when S3 says the key has no current object (not when the bucket is missing). */
export function s3IsNoSuchKey(e: unknown): boolean {
  return s3Status(e) === 404 && s3ErrorName(e) !== 'NoSuchBucket';
}
