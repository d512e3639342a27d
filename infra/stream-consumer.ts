/**
 * A streaming consumer of a varve table on AWS: a serialised discovery function that plans the
 * splits of new snapshots into a FIFO queue (one message group per partition and bucket), and
 * reader functions on that queue that hand each split's rows to a sink.
 */
import { Duration } from 'aws-cdk-lib';
import { Rule, Schedule, type IEventBus } from 'aws-cdk-lib/aws-events';
import type { Dashboard } from 'aws-cdk-lib/aws-cloudwatch';
import { SqsQueue } from 'aws-cdk-lib/aws-events-targets';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IGrantable } from 'aws-cdk-lib/aws-iam';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { IQueue, Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { SNAPSHOT_COMMITTED, VARVE_EVENT_SOURCE } from '../lib/aws-contract.js';
import { InvalidArgumentError } from '../lib/errors.js';
import { VarveAlarms, type VarveAlarmThresholds } from './alarms.js';
import { createConsumerDashboard } from './dashboard.js';
import type { Function as VarveLambda } from 'aws-cdk-lib/aws-lambda';
import { createVarveFunction, handlerEntry } from './lambda.js';
import { createFailureQueue, createQueueWithDlq, SPLIT_MAX_RECEIVE_COUNT, VISIBILITY_FACTOR } from './queues.js';
import { addVarveDeployRules } from './deploy-rules.js';
import { grantObjectPattern } from './table-access.js';
import { NAME, tagAll, type VarveTable } from './table.js';

/** Where a consumer's rows go. */
export type StreamSink =
  /** Your own handler (built with `createStreamHandler` from functions/shared/stream-handler.ts). */
  | { readonly kind: 'function'; readonly entry: string; readonly handler?: string }
  /** Another varve table in the same warehouse; rows keep their row kinds. */
  | { readonly kind: 'table'; readonly target: VarveTable }
  /** Events on an EventBridge bus. @default bus: the warehouse's bus */
  | { readonly kind: 'eventbridge'; readonly bus?: IEventBus };

/** Options of a {@link StreamConsumer}. */
export interface StreamConsumerProps {
  /** The table whose changes are streamed. */
  readonly table: VarveTable;
  /** Names the consumer file `consumer/consumer-<id>`; letters, digits, '_' or '-'. */
  readonly consumerId: string;
  /** Where the rows go. */
  readonly sink: StreamSink;
  /** Reader timeout; the split queue's visibility timeout is 6× this. @default 5 minutes */
  readonly readTimeout?: Duration;
  /** @default 1769 (one full vCPU) */
  readonly readMemorySize?: number;
  /** Cap on concurrent readers (2–1000); without it, one per active bucket. @default no cap */
  readonly maxConcurrency?: number;
  /** Backstop discovery schedule; commits also trigger discovery at once. @default 1 minute */
  readonly discoverEvery?: Duration;
  /** The SNS topic every alarm of the consumer notifies (ALARM and OK). @default the table's alarmTopic */
  readonly alarmTopic?: ITopic;
  /** Where the consumer's alarms fire. @default the table's thresholds, else the defaults */
  readonly alarmThresholds?: VarveAlarmThresholds;
  /** Tags for every resource of the consumer (besides the warehouse's, `varve:table` and `varve:consumer`). @default none */
  readonly tags?: Record<string, string>;
}

const DISCOVER_TIMEOUT = Duration.minutes(2);

/** The detail-type of the event the commit function puts after each commit (declared beside the handlers). */
export { SNAPSHOT_COMMITTED };

/**
 * Streams a varve table's changes to a sink, one FIFO message group per bucket so that per-key
 * order holds end to end.
 *
 * Discovery is triggered once a minute and right after every `Snapshot Committed` event of its
 * table. Both triggers go through a FIFO queue with a single message group, so one planner runs
 * at a time (the group has one batch in flight) without reserved concurrency and its throttles,
 * and triggers that pile up while a run is busy are folded into the next run (a batch of up to
 * 10). A run that keeps failing moves its triggers to the discovery DLQ. Readers consume the split queue
 * in batches of 10 and report partial-batch failures, so a failed split and the splits behind it
 * in its group are redelivered in order.
 *
 * @example
 * new StreamConsumer(this, 'OrdersAudit', {
 *   table: orders,
 *   consumerId: 'orders-audit',
 *   sink: { kind: 'function', entry: path.join(dir, 'audit-sink.ts') },
 * });
 */
export class StreamConsumer extends Construct {
  /** The table whose changes are streamed. */
  readonly table: VarveTable;
  /** The consumer id (`consumer/consumer-<id>`). */
  readonly consumerId: string;
  /** Split messages; group = partition and bucket, dedup id = consumer, snapshot, partition, bucket. */
  readonly splitQueue: Queue;
  /** Every dead-letter queue of the consumer: split, discovery and discovery triggers EventBridge could not deliver. */
  readonly deadLetterQueues: IQueue[];
  /** Discovery triggers (schedule and commit events), one message group: one planner at a time. */
  readonly discoverQueue: Queue;
  /** The serialised planner. */
  readonly discoverFunction: VarveLambda;
  /** How often discovery runs without a commit (its lag metrics come at least this often). */
  readonly discoverEvery: Duration;
  /** The topic the consumer's alarms notify, if any. */
  readonly alarmTopic?: ITopic;
  /** The consumer's alarms. */
  readonly alarms: VarveAlarms;
  /** The consumer's CloudWatch dashboard. */
  readonly dashboard: Dashboard;
  /** The split reader that feeds the sink. */
  readonly readFunction: VarveLambda;

  constructor(scope: Construct, id: string, props: StreamConsumerProps) {
    super(scope, id);
    if (!NAME.test(props.consumerId)) {
      throw new InvalidArgumentError(
        `consumer id '${props.consumerId}' is not allowed: use letters, digits, '_' or '-' only`,
      );
    }
    const { table } = props;
    addVarveDeployRules(this);
    this.table = table;
    this.consumerId = props.consumerId;
    tagAll(this, {
      ...table.warehouse.tags,
      'varve:table': table.name,
      'varve:consumer': props.consumerId,
      ...props.tags,
    });
    const encryptionKey = table.warehouse.encryptionKey;
    const readTimeout = props.readTimeout ?? Duration.minutes(5);
    const consumerEnv = { ...table.baseEnvironment, VARVE_CONSUMER_ID: props.consumerId };

    // Many groups (one per bucket): high-throughput FIFO, with deduplication per group.
    const split = createQueueWithDlq(this, 'SplitQueue', {
      fifo: true,
      highThroughput: true,
      consumerTimeout: readTimeout,
      // The reader moves a split to the DLQ after its own SPLIT_FAILURE_BUDGET failures; SQS's
      // count also counts the receives a split spent behind a failed one, so it is a backstop.
      maxReceiveCount: SPLIT_MAX_RECEIVE_COUNT,
      encryptionKey,
      tags: { warehouse: table.warehouse.uri, table: table.name, queue: 'split', consumer: props.consumerId },
    });
    this.splitQueue = split.queue;
    this.deadLetterQueues = [split.deadLetterQueue];

    // One message group: FIFO keeps one batch of a group in flight, so discovery is serialised
    // (two planners would race on the consumer file). The visibility is Lambda's 6x the timeout
    // like every queue varve consumes (infra/deploy-rules.ts): a run that fails holds the group
    // that long before it is retried, and after MAX_RECEIVE_COUNT its triggers land in the DLQ;
    // none is worth redriving, since each run plans from the consumer file up to the latest snapshot.
    const discover = createQueueWithDlq(this, 'DiscoverQueue', {
      fifo: true,
      contentBasedDeduplication: true,
      consumerTimeout: DISCOVER_TIMEOUT,
      encryptionKey,
    });
    this.discoverQueue = discover.queue;
    // EventBridge takes standard queues only as a target's DLQ: triggers it could not deliver to
    // the FIFO discovery queue land in a standard queue of their own.
    const triggerFailures = createFailureQueue(this, 'DiscoverTriggerDlq', encryptionKey);
    this.deadLetterQueues.push(discover.deadLetterQueue, triggerFailures);
    this.discoverFunction = createVarveFunction(this, 'Discover', {
      ...table.functionDefaults(),
      entry: handlerEntry('discover'),
      description: `varve discovery for ${table.name} consumer ${props.consumerId}`,
      timeout: DISCOVER_TIMEOUT,
      memorySize: 1024,
      environment: { ...consumerEnv, VARVE_SPLIT_QUEUE_URL: this.splitQueue.queueUrl },
    });
    table.grantRead(this.discoverFunction);
    this.grantConsumerFiles(this.discoverFunction, ['', '@*'], ['s3:PutObject', 's3:DeleteObject']);
    table.warehouse.grantKeyWrite(this.discoverFunction);
    this.splitQueue.grantSendMessages(this.discoverFunction);
    this.discoverFunction.addEventSource(new SqsEventSource(this.discoverQueue, { batchSize: 10 }));
    const trigger = new SqsQueue(this.discoverQueue, {
      messageGroupId: 'discover',
      retryAttempts: 8,
      deadLetterQueue: triggerFailures,
    });
    this.discoverEvery = props.discoverEvery ?? Duration.minutes(1);
    new Rule(this, 'DiscoverSchedule', {
      description: `varve discovery backstop for ${table.name} / ${props.consumerId}`,
      schedule: Schedule.rate(this.discoverEvery),
      targets: [trigger],
    });
    // beyond the schedule's one-minute floor: discovery right after each commit of the table that
    // gives a consumer something. A COMPACT snapshot without changelog files only reorganises
    // files: no changelog producer streams anything from it (DESIGN.md, "Reads"), so the rule
    // lets it through only when it carries a changelog (lookup, full-compaction producers).
    new Rule(this, 'DiscoverOnCommit', {
      description: `varve discovery on commit of ${table.name} / ${props.consumerId}`,
      eventBus: table.warehouse.eventBus,
      eventPattern: {
        source: [VARVE_EVENT_SOURCE],
        detailType: [SNAPSHOT_COMMITTED],
        detail: { table: [table.name], $or: [{ commitKind: [{ 'anything-but': 'COMPACT' }] }, { changelog: [true] }] },
      },
      targets: [trigger],
    });

    const sink = props.sink;
    this.readFunction = createVarveFunction(this, 'Read', {
      ...table.functionDefaults(),
      entry: sink.kind === 'function' ? sink.entry : handlerEntry('read'),
      handler: sink.kind === 'function' ? sink.handler : undefined,
      description: `varve split reader for ${table.name} consumer ${props.consumerId}`,
      timeout: readTimeout,
      memorySize: props.readMemorySize ?? 1769,
      // The split queue's visibility: a sink call must end before a split is handed out again.
      environment: {
        ...consumerEnv,
        VARVE_SPLIT_VISIBILITY_S: String(readTimeout.toSeconds() * VISIBILITY_FACTOR),
        VARVE_SPLIT_DLQ_URL: split.deadLetterQueue.queueUrl,
        ...this.sinkEnvironment(sink),
      },
    });
    // A split that failed on its own SPLIT_FAILURE_BUDGET times is moved to the DLQ by the reader.
    split.deadLetterQueue.grantSendMessages(this.readFunction);
    table.grantRead(this.readFunction);
    // Readers record per-bucket progress next to the consumer file (discovery folds it in), hold
    // each bucket's split fence while they deliver it (lib/stream/split-fence.ts), and count a
    // failing split's own failures (lib/stream/split-failures.ts).
    this.grantConsumerFiles(this.readFunction, ['@progress/*', '@fence/*', '@failures/*'], ['s3:PutObject']);
    table.warehouse.grantKeyWrite(this.readFunction);
    if (sink.kind === 'table') sink.target.grantWrite(this.readFunction);
    if (sink.kind === 'eventbridge') (sink.bus ?? table.warehouse.eventBus).grantPutEventsTo(this.readFunction);
    this.readFunction.addEventSource(
      new SqsEventSource(this.splitQueue, {
        batchSize: 10, // the FIFO maximum; no batching window on FIFO
        maxConcurrency: props.maxConcurrency,
        reportBatchItemFailures: true,
      }),
    );

    this.alarmTopic = props.alarmTopic ?? table.alarmTopic;
    this.alarms = new VarveAlarms(this, 'Alarms', {
      topic: this.alarmTopic,
      thresholds: props.alarmThresholds ?? table.alarmThresholds,
    });
    this.alarms.watchConsumer(this);
    this.dashboard = createConsumerDashboard(this, 'Dashboard', this, this.alarms);
  }

  /** `VARVE_SINK` for the built-in sinks; a table sink also gets where its target's commits go. */
  private sinkEnvironment(sink: StreamSink): Record<string, string> {
    if (sink.kind === 'function') return {};
    if (sink.kind === 'eventbridge') {
      return { VARVE_SINK: `eventbridge:${(sink.bus ?? this.table.warehouse.eventBus).eventBusName}` };
    }
    if (sink.target.warehouse !== this.table.warehouse) {
      throw new InvalidArgumentError(
        `table sink ${sink.target.name} lives in another warehouse than ${this.table.name}: a table sink must be a table of the same Warehouse construct`,
      );
    }
    const target = Object.fromEntries(
      Object.entries(sink.target.writerEnvironment()).map(([k, v]) => [k.replace(/^VARVE_/, 'VARVE_SINK_'), v]),
    );
    return { VARVE_SINK: `table:${sink.target.name}`, ...target };
  }

  /**
   * Object access to `consumer/consumer-<id><suffix>` for each suffix: `''` is the consumer file
   * itself, `'@…'` the files beside it (split lists, progress). Never `consumer-<id>*`, which
   * would also cover the consumer `<id>-v2`; '@' never occurs in a consumer id.
   */
  private grantConsumerFiles(
    grantee: IGrantable,
    suffixes: string[],
    actions: ('s3:PutObject' | 's3:DeleteObject')[],
  ): void {
    for (const suffix of suffixes) {
      grantObjectPattern(
        grantee,
        this.table.warehouse.bucket,
        `${this.table.tablePrefix}/consumer/consumer-${this.consumerId}${suffix}`,
        actions,
      );
    }
  }
}
