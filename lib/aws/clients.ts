/**
 * The AWS clients of a function, one of each per container (connections are reused across
 * invocations). Region, credentials and endpoint come from the environment, AWS_ENDPOINT_URL
 * included, so the same code talks to AWS, LocalStack or moto.
 */
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { decorateAwsClient } from '../store/client-decorator.js';
import { defaultSqsClient } from '../stream/sqs-queue.js';

let sqs: SQSClient | undefined;
let events: EventBridgeClient | undefined;

/** The container's SQS client. */
export function sqsClient(): SQSClient {
  return (sqs ??= defaultSqsClient());
}

/** The container's EventBridge client. */
export function eventBridgeClient(): EventBridgeClient {
  return (events ??= decorateAwsClient(new EventBridgeClient({})));
}
