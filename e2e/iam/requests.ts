/**
 * What IAM authorises for one AWS SDK call: the action, the resource ARN and the request's
 * condition keys (s3:prefix, s3:if-none-match, s3:if-match …), as the service's authorization
 * reference defines them. A call this table does not know is reported, never silently allowed.
 *
 * S3's rule for missing keys is here too: a GET or HEAD of a key that does not exist answers 404
 * only when the caller may also s3:ListBucket the bucket (evaluated without an s3:prefix, since
 * the request has none); otherwise S3 answers 403 AccessDenied.
 */
import { ACCOUNT, REGION } from '../aws/template.js';

/** One recorded SDK call, as the audit middleware saw it. */
export interface RecordedCall {
  /** Logical id of the function that made the call. */
  fn: string;
  /** `S3`, `SQS`, `DynamoDB`, `EventBridge`, … (the client name without `Client`). */
  service: string;
  /** `GetObject`, `SendMessageBatch`, … (the command name without `Command`). */
  command: string;
  input: Record<string, any>;
  /** HTTP status of the answer (moto's), when there was one. */
  status?: number;
  /** Error name, when the call failed. */
  error?: string;
}

/** One authorisation IAM makes for a call. */
export interface IamRequest {
  action: string;
  resource: string;
  context: Record<string, string>;
  /** Why this authorisation happens, when it is not the call's own (the 404 rule). */
  why?: string;
}

const s3Object = (bucket: string, key: string) => `arn:aws:s3:::${bucket}/${key}`;
const s3Bucket = (bucket: string) => `arn:aws:s3:::${bucket}`;

/** `https://sqs…/<account>/<name>` (or moto's `http://host/<account>/<name>`) → the queue's ARN. */
export function queueArnOfUrl(url: string): string {
  const parts = new URL(url).pathname.split('/').filter(Boolean);
  if (parts.length < 2) throw new Error(`not an SQS queue URL: ${url}`);
  return `arn:aws:sqs:${REGION}:${parts[parts.length - 2]}:${parts[parts.length - 1]}`;
}

const tableArn = (name: string) =>
  name.startsWith('arn:') ? name : `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${name}`;
const busArn = (name: string | undefined) =>
  name?.startsWith('arn:') ? name : `arn:aws:events:${REGION}:${ACCOUNT}:event-bus/${name ?? 'default'}`;

function s3Conditions(input: Record<string, any>): Record<string, string> {
  const c: Record<string, string> = {};
  if (input.IfNoneMatch !== undefined) c['s3:if-none-match'] = String(input.IfNoneMatch);
  if (input.IfMatch !== undefined) c['s3:if-match'] = String(input.IfMatch);
  return c;
}

/** The authorisations of a call; throws for a call the table does not cover. */
export function iamRequestsOf(call: RecordedCall): IamRequest[] {
  const { service, command, input } = call;
  const one = (action: string, resource: string, context: Record<string, string> = {}): IamRequest[] => [
    { action, resource, context },
  ];
  switch (`${service}:${command}`) {
    case 'S3:GetObject':
    case 'S3:HeadObject': {
      const own = one('s3:GetObject', s3Object(input.Bucket, input.Key));
      // The missing-key rule: S3 answers 404 only to a caller that may list the bucket.
      if (call.status === 404 || call.error === 'NoSuchKey' || call.error === 'NotFound') {
        own.push({
          action: 's3:ListBucket',
          resource: s3Bucket(input.Bucket),
          context: {},
          why: `${command} of a missing key answers 404 only with s3:ListBucket, else 403`,
        });
      }
      return own;
    }
    case 'S3:PutObject':
    case 'S3:CreateMultipartUpload':
    case 'S3:UploadPart':
    case 'S3:CompleteMultipartUpload':
      return one('s3:PutObject', s3Object(input.Bucket, input.Key), s3Conditions(input));
    case 'S3:AbortMultipartUpload':
      return one('s3:AbortMultipartUpload', s3Object(input.Bucket, input.Key));
    case 'S3:CopyObject': {
      const [srcBucket, ...srcKey] = decodeURIComponent(String(input.CopySource).replace(/^\//, '')).split('/');
      return [
        { action: 's3:PutObject', resource: s3Object(input.Bucket, input.Key), context: s3Conditions(input) },
        { action: 's3:GetObject', resource: s3Object(srcBucket, srcKey.join('/')), context: {} },
      ];
    }
    case 'S3:DeleteObject':
      return one('s3:DeleteObject', s3Object(input.Bucket, input.Key), s3Conditions(input));
    case 'S3:DeleteObjects':
      return (input.Delete?.Objects ?? []).map((o: { Key: string }) => ({
        action: 's3:DeleteObject',
        resource: s3Object(input.Bucket, o.Key),
        context: {},
      }));
    case 'S3:ListObjectsV2':
    case 'S3:ListObjects': {
      const context: Record<string, string> = {};
      if (input.Prefix !== undefined) context['s3:prefix'] = input.Prefix;
      if (input.Delimiter !== undefined) context['s3:delimiter'] = input.Delimiter;
      if (input.MaxKeys !== undefined) context['s3:max-keys'] = String(input.MaxKeys);
      return one('s3:ListBucket', s3Bucket(input.Bucket), context);
    }
    case 'SQS:SendMessage':
    case 'SQS:SendMessageBatch':
      return one('sqs:SendMessage', queueArnOfUrl(input.QueueUrl));
    case 'SQS:ReceiveMessage':
      return one('sqs:ReceiveMessage', queueArnOfUrl(input.QueueUrl));
    case 'SQS:DeleteMessage':
    case 'SQS:DeleteMessageBatch':
      return one('sqs:DeleteMessage', queueArnOfUrl(input.QueueUrl));
    case 'SQS:ChangeMessageVisibility':
    case 'SQS:ChangeMessageVisibilityBatch':
      return one('sqs:ChangeMessageVisibility', queueArnOfUrl(input.QueueUrl));
    case 'SQS:GetQueueAttributes':
      return one('sqs:GetQueueAttributes', queueArnOfUrl(input.QueueUrl));
    case 'SQS:GetQueueUrl':
      return one(
        'sqs:GetQueueUrl',
        `arn:aws:sqs:${REGION}:${input.QueueOwnerAWSAccountId ?? ACCOUNT}:${input.QueueName}`,
      );
    case 'DynamoDB:GetItem':
    case 'DynamoDB:PutItem':
    case 'DynamoDB:DeleteItem':
    case 'DynamoDB:UpdateItem':
    case 'DynamoDB:Query':
    case 'DynamoDB:Scan':
    case 'DynamoDB:DescribeTable':
      return one(`dynamodb:${command}`, tableArn(input.TableName));
    case 'DynamoDB:BatchGetItem':
      return Object.keys(input.RequestItems ?? {}).map((t) => ({
        action: 'dynamodb:BatchGetItem',
        resource: tableArn(t),
        context: {},
      }));
    case 'DynamoDB:BatchWriteItem':
      return Object.keys(input.RequestItems ?? {}).map((t) => ({
        action: 'dynamodb:BatchWriteItem',
        resource: tableArn(t),
        context: {},
      }));
    case 'DynamoDB:TransactWriteItems':
      return (input.TransactItems ?? []).map((it: Record<string, { TableName: string }>) => {
        const [kind, body] = Object.entries(it)[0];
        const action =
          { ConditionCheck: 'ConditionCheckItem', Put: 'PutItem', Delete: 'DeleteItem', Update: 'UpdateItem' }[kind] ??
          kind;
        return { action: `dynamodb:${action}`, resource: tableArn(body.TableName), context: {} };
      });
    case 'EventBridge:PutEvents': {
      const buses = new Set<string>(
        (input.Entries ?? []).map((e: { EventBusName?: string }) => busArn(e.EventBusName)),
      );
      return [...buses].map((resource) => ({ action: 'events:PutEvents', resource, context: {} }));
    }
    case 'CloudWatch:PutMetricData':
      return one('cloudwatch:PutMetricData', '*');
  }
  throw new Error(`the IAM audit does not know what ${service} ${command} needs: add it to e2e/iam/requests.ts`);
}
