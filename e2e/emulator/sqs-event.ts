/**
 * What Lambda's SQS event source mapping does with a queue, shared by the emulator's mappings
 * (esm.ts) and the handler tests' stand-in (test/functions/harness.ts): receive a batch with every
 * attribute the mapping passes on, and build the SQSEvent the function is invoked with.
 */
import { ReceiveMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { ACCOUNT, REGION } from '../aws/template.js';

/** Receives up to `max` (≤ 10) messages with their system attributes (receive count, group, sequence number). */
export async function receiveMessages(
  sqs: SQSClient,
  queueUrl: string,
  max: number,
  waitSeconds = 0,
): Promise<Message[]> {
  const r = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: Math.min(10, max),
      WaitTimeSeconds: waitSeconds,
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    }),
  );
  return r.Messages ?? [];
}

/** The ARN of a queue from its URL (`…/<account>/<name>`). */
export function queueArnOfUrl(queueUrl: string): string {
  const parts = queueUrl.split('/');
  const name = parts[parts.length - 1];
  const account = /^\d{12}$/.test(parts[parts.length - 2] ?? '') ? parts[parts.length - 2] : ACCOUNT;
  return `arn:aws:sqs:${REGION}:${account}:${name}`;
}

/** An SQSEvent as the event source mapping builds it from received messages. */
export function sqsEventOf(queueArn: string, messages: Message[]): SQSEvent {
  return {
    Records: messages.map(
      (m): SQSRecord => ({
        messageId: m.MessageId!,
        receiptHandle: m.ReceiptHandle!,
        body: m.Body ?? '',
        attributes: {
          ApproximateReceiveCount: m.Attributes?.ApproximateReceiveCount ?? '1',
          SentTimestamp: m.Attributes?.SentTimestamp ?? String(Date.now()),
          SenderId: m.Attributes?.SenderId ?? 'AIDAEXAMPLE',
          ApproximateFirstReceiveTimestamp: m.Attributes?.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
          ...(m.Attributes?.MessageGroupId ? { MessageGroupId: m.Attributes.MessageGroupId } : {}),
          ...(m.Attributes?.MessageDeduplicationId
            ? { MessageDeduplicationId: m.Attributes.MessageDeduplicationId }
            : {}),
          ...(m.Attributes?.SequenceNumber ? { SequenceNumber: m.Attributes.SequenceNumber } : {}),
        },
        messageAttributes: {},
        md5OfBody: m.MD5OfBody ?? '',
        eventSource: 'aws:sqs',
        eventSourceARN: queueArn,
        awsRegion: REGION,
      }),
    ),
  };
}
