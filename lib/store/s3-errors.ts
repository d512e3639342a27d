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

/** errno codes of a request that found no server to talk to (as opposed to one that broke off). */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT']);

/** The endpoint an AWS client of `service` sends to, as the SDK takes it from the environment. */
function awsEndpoint(service: 'S3' | 'SQS'): string {
  const override = process.env[`AWS_ENDPOINT_URL_${service}`] ?? process.env.AWS_ENDPOINT_URL;
  if (override) return override;
  return `https://${service.toLowerCase()}.${process.env.AWS_REGION ?? '<region>'}.amazonaws.com`;
}

/**
 * What is missing or wrong in the AWS setup behind an SDK error of a `service` request, said so
 * that a person can fix it: no region, no credentials, or an endpoint nothing answers at.
 * Undefined when the error is an answer of the service (or anything else).
 */
export function awsSetupProblem(e: unknown, service: 'S3' | 'SQS'): string | undefined {
  if (e instanceof Error && e.message === 'Region is missing') {
    return 'no AWS region is configured: set AWS_REGION (e.g. export AWS_REGION=eu-west-1), or region in your profile of ~/.aws/config (AWS_PROFILE)';
  }
  if (s3ErrorName(e) === 'CredentialsProviderError') {
    return (
      'no AWS credentials were found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE ' +
      '(aws configure, aws sso login); against moto or LocalStack (AWS_ENDPOINT_URL) any values do'
    );
  }
  const code = shape(e).code;
  if (typeof code === 'string' && UNREACHABLE.has(code)) {
    const variable = [`AWS_ENDPOINT_URL_${service}`, 'AWS_ENDPOINT_URL'].find((v) => process.env[v] !== undefined);
    const check = variable
      ? `check that the server ${variable} names is running and reachable from here, or unset ${variable} to use AWS`
      : 'check the network (proxy, VPN, DNS) and AWS_REGION';
    return `cannot reach ${service} at ${awsEndpoint(service)} (${code}): ${check}`;
  }
  return undefined;
}
