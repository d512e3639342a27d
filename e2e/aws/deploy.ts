/**
 * "Deploys" a synthesised template onto moto: the bucket, the DynamoDB tables, the event buses
 * and the SQS queues with the template's own attributes (FIFO, deduplication scope, visibility
 * timeout, retention, redrive policy with its maxReceiveCount), under unique physical names. What
 * moto cannot run (functions, mappings, rules) gets physical names only; the emulator runs them.
 */
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateEventBusCommand, EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SetQueueAttributesCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { ACCOUNT, REGION, Resolver, type CfnTemplate, type Physical } from './template.js';

/** Queue attributes CloudFormation passes through to CreateQueue. */
const QUEUE_ATTRS = [
  'FifoQueue',
  'ContentBasedDeduplication',
  'DeduplicationScope',
  'FifoThroughputLimit',
  'VisibilityTimeout',
  'MessageRetentionPeriod',
  'DelaySeconds',
  'ReceiveMessageWaitTimeSeconds',
  'MaximumMessageSize',
];

/** One deployment: the physical resources and a resolver over them. */
export interface Deployment {
  template: CfnTemplate;
  resolver: Resolver;
  physical: Map<string, Physical>;
  /** Physical name of the (single) warehouse bucket. */
  bucket: string;
}

/**
 * Creates the template's stateful resources on the configured endpoint (moto). With `tagQueues`,
 * each queue gets the template's tags, as CloudFormation tags it (what `varve redrive` finds the
 * queues by); off by default, so that deployments of the same table by tests on a shared moto do
 * not make that lookup ambiguous for the one run that checks it (e2e/redrive-round.ts).
 */
export async function deployTemplate(
  template: CfnTemplate,
  opts: { suffix?: string; tagQueues?: boolean } = {},
): Promise<Deployment> {
  const suffix = opts.suffix ?? randomUUID().slice(0, 8);
  const physical = new Map<string, Physical>();
  const resolver = new Resolver(template, physical);
  const s3 = new S3Client({ forcePathStyle: true });
  const dynamo = new DynamoDBClient({});
  const sqs = new SQSClient({});
  const events = new EventBridgeClient({});
  let bucket = '';
  const entries = Object.entries(template.Resources);

  // Names first, so that every Ref resolves whatever the creation order.
  for (const [id, r] of entries) {
    const short = id.slice(0, 48);
    switch (r.Type) {
      case 'AWS::S3::Bucket': {
        const name = `varve-e2e-${suffix}-${short.toLowerCase()}`.slice(0, 63);
        physical.set(id, {
          ref: name,
          attrs: {
            Arn: `arn:aws:s3:::${name}`,
            DomainName: `${name}.s3.amazonaws.com`,
            RegionalDomainName: `${name}.s3.${REGION}.amazonaws.com`,
          },
        });
        bucket = name;
        break;
      }
      case 'AWS::DynamoDB::Table': {
        const name = `${short}-${suffix}`;
        physical.set(id, {
          ref: name,
          attrs: { Arn: `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${name}`, StreamArn: '' },
        });
        break;
      }
      case 'AWS::Events::EventBus': {
        const name = `${short}-${suffix}`;
        physical.set(id, {
          ref: name,
          attrs: { Arn: `arn:aws:events:${REGION}:${ACCOUNT}:event-bus/${name}`, Name: name },
        });
        break;
      }
      case 'AWS::SQS::Queue': {
        const name = `${short}-${suffix}${r.Properties?.FifoQueue ? '.fifo' : ''}`;
        const url = `${process.env.AWS_ENDPOINT_URL ?? `https://sqs.${REGION}.amazonaws.com`}/${ACCOUNT}/${name}`;
        physical.set(id, {
          ref: url,
          attrs: { Arn: `arn:aws:sqs:${REGION}:${ACCOUNT}:${name}`, QueueName: name, QueueUrl: url },
        });
        break;
      }
      case 'AWS::Lambda::Function': {
        const name = `${short}-${suffix}`;
        physical.set(id, { ref: name, attrs: { Arn: `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${name}` } });
        break;
      }
      case 'AWS::IAM::Role':
        physical.set(id, { ref: id, attrs: { Arn: `arn:aws:iam::${ACCOUNT}:role/${id}`, RoleId: id } });
        break;
      default:
        physical.set(id, { ref: id, attrs: { Arn: `arn:aws:cloudformation:${REGION}:${ACCOUNT}:resource/${id}` } });
    }
  }

  for (const [id, r] of entries) {
    const name = physical.get(id)!.ref;
    if (r.Type === 'AWS::S3::Bucket') await s3.send(new CreateBucketCommand({ Bucket: name }));
    if (r.Type === 'AWS::DynamoDB::Table') {
      const p = resolver.resolve(r.Properties ?? {});
      await dynamo.send(
        new CreateTableCommand({
          TableName: name,
          KeySchema: p.KeySchema,
          AttributeDefinitions: p.AttributeDefinitions,
          BillingMode: 'PAY_PER_REQUEST',
        }),
      );
    }
    if (r.Type === 'AWS::Events::EventBus') await events.send(new CreateEventBusCommand({ Name: name }));
  }
  // Queues without redrive first (the DLQs), then the redrive policies pointing at them.
  const queues = entries.filter(([, r]) => r.Type === 'AWS::SQS::Queue');
  for (const [id, r] of queues) {
    const p = resolver.resolve(r.Properties ?? {});
    const Attributes: Record<string, string> = {};
    for (const a of QUEUE_ATTRS) if (p[a] !== undefined) Attributes[a] = String(p[a]);
    const tags = opts.tagQueues
      ? Object.fromEntries(((p.Tags ?? []) as Array<{ Key: string; Value: string }>).map((t) => [t.Key, t.Value]))
      : undefined;
    await sqs.send(new CreateQueueCommand({ QueueName: physical.get(id)!.attrs.QueueName, Attributes, tags }));
  }
  for (const [id, r] of queues) {
    const p = resolver.resolve(r.Properties ?? {});
    if (p.RedrivePolicy) {
      await sqs.send(
        new SetQueueAttributesCommand({
          QueueUrl: physical.get(id)!.ref,
          Attributes: { RedrivePolicy: JSON.stringify(p.RedrivePolicy) },
        }),
      );
    }
  }
  // moto's own URL and ARN are authoritative: check that ours match.
  for (const [id] of queues) {
    const a = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: physical.get(id)!.ref, AttributeNames: ['QueueArn'] }),
    );
    if (a.Attributes?.QueueArn !== physical.get(id)!.attrs.Arn) {
      throw new Error(`moto gave queue ${id} the ARN ${a.Attributes?.QueueArn}, not ${physical.get(id)!.attrs.Arn}`);
    }
  }
  for (const c of [s3, dynamo, sqs, events]) c.destroy();
  if (!bucket) throw new Error('the template has no S3 bucket');
  return { template, resolver, physical, bucket };
}
