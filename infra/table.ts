/**
 * One varve table on AWS: its ingestion paths (an SQS queue and an S3 inbox), the group-commit
 * FIFO queue, the compaction FIFO queue grouped by bucket, scheduled expiry, and a function for
 * each with least-privilege access to the table's own key prefix.
 */
import { Duration, Size, Stack, Tags } from 'aws-cdk-lib';
import { CfnDatabase } from 'aws-cdk-lib/aws-glue';
import { AwsCustomResource, AwsCustomResourcePolicy, PhysicalResourceId } from 'aws-cdk-lib/custom-resources';
import { PolicyStatement, type IGrantable } from 'aws-cdk-lib/aws-iam';
import { Match, Rule, RuleTargetInput, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { Dashboard } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Queue, type IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { VARVE_METRICS_NAMESPACE, VARVE_SERVICE_NAME, type CommitMode } from '../lib/aws-contract.js';
import { InvalidArgumentError } from '../lib/errors.js';
import { VarveAlarms, type VarveAlarmThresholds } from './alarms.js';
import { createTableDashboard } from './dashboard.js';
import type { Function as VarveLambda } from 'aws-cdk-lib/aws-lambda';
import { createVarveFunction, handlerEntry, type VarveFunctionProps } from './lambda.js';
import { createFailureQueue, createQueueWithDlq, encryptionOf, type QueueWithDlq } from './queues.js';
import { addVarveDeployRules } from './deploy-rules.js';
import { grantListUnder, grantObjects, grantTableDeletes } from './table-access.js';
import type { Warehouse } from './warehouse.js';

/** `queue`: writers send file lists to the commit FIFO queue (group commit); `direct`: writers commit themselves. */
export type { CommitMode };

/** How records reach the ingest function. */
/** The CloudFormation type of the Glue table a VarveTable registers (an AwsCustomResource). */
export const GLUE_TABLE_RESOURCE_TYPE = 'Custom::VarveGlueTable';

export interface IngestOptions {
  /** Messages per invocation from the ingest queue, 1–100. @default 100 */
  readonly batchSize?: number;
  /** How long the event source gathers a batch; required above 10 messages. @default 2 seconds */
  readonly maxBatchingWindow?: Duration;
  /** Cap on concurrent ingest invocations from the queue (2–1000). @default no cap */
  readonly maxConcurrency?: number;
  /** @default 1769 (one full vCPU) */
  readonly memorySize?: number;
}

/** Sizing of the compaction function. */
export interface CompactionOptions {
  /** @default 3008 */
  readonly memorySize?: number;
  /** /tmp for spilling merge runs. @default 2 GiB */
  readonly ephemeralStorageSize?: Size;
  /** Cap on concurrent compactions (2–1000); each bucket is serialised anyway. @default no cap */
  readonly maxConcurrency?: number;
}

/** Options of a {@link VarveTable}. */
export interface VarveTableProps {
  /** The warehouse the table lives in. */
  readonly warehouse: Warehouse;
  /** Database name (letters, digits, '_' or '-'). */
  readonly database: string;
  /** Table name (letters, digits, '_' or '-'). */
  readonly table: string;
  /** @default 'queue' */
  readonly commitMode?: CommitMode;
  /** Batching and sizing of ingestion. */
  readonly ingest?: IngestOptions;
  /** Sizing of compaction. */
  readonly compaction?: CompactionOptions;
  /** How often snapshot expiry runs (with journal-driven orphan cleanup: no listing of the table). @default 15 minutes */
  readonly expireEvery?: Duration;
  /**
   * How often the safety-net orphan scan runs: the expiry function lists one bounded slice of the
   * table (`orphan-files.scan.max-keys`, 100,000 keys by default) after the marker the previous
   * scan left. @default 1 day
   */
  readonly orphanScanEvery?: Duration;
  /** The SNS topic every alarm of the table notifies (ALARM and OK). @default the warehouse's alarmTopic */
  readonly alarmTopic?: ITopic;
  /** Where the table's alarms fire. @default the defaults of {@link VarveAlarmThresholds} */
  readonly alarmThresholds?: VarveAlarmThresholds;
  /** Tags for every resource of the table (besides the warehouse's and `varve:table`). @default none */
  readonly tags?: Record<string, string>;
  /**
   * Registers the table's Iceberg export (table option `metadata.iceberg.storage`) in the Glue
   * Data Catalog, so Athena queries it: the commit, ingest (direct mode) and compact functions
   * point the Glue table's `metadata_location` at each new export. @default not registered
   */
  readonly glue?: VarveGlueOptions;
}

/** The Glue Data Catalog registration of a table's Iceberg export. */
export interface VarveGlueOptions {
  /** Glue database name (created unless `databaseExists`). */
  readonly database: string;
  /** Glue table name. @default the varve table name */
  readonly table?: string;
  /** The Glue database exists already (made elsewhere): do not create it. @default false */
  readonly databaseExists?: boolean;
}

/** Database, table and consumer names become key segments and `db.table` names: keep them plain. */
export const NAME = /^[A-Za-z0-9_-]+$/;

/** Glue database and table names Athena can query: lower case, digits and '_'. */
const GLUE_NAME = /^[a-z0-9_]{1,255}$/;

const INGEST_TIMEOUT = Duration.seconds(60);
const COMMIT_TIMEOUT = Duration.seconds(60);
// A compaction job is one bucket's bounded unit of work; it must fit this budget.
const COMPACT_TIMEOUT = Duration.minutes(15);
const EXPIRE_TIMEOUT = Duration.minutes(5);

/**
 * A varve table's ingestion, commit, compaction and expiry on Lambda + SQS.
 *
 * Records arrive as messages on {@link ingestQueue} or as files under the table's inbox prefix
 * (S3 → EventBridge → ingest). In `queue` mode the ingest function writes level-0 files and sends
 * their list to the commit FIFO queue (one message group per table), where the commit function
 * folds many into one snapshot; in `direct` mode ingest commits itself. Compaction jobs go to a
 * FIFO queue grouped by bucket, so one bucket never compacts twice at once.
 *
 * @example
 * const warehouse = new Warehouse(this, 'Warehouse');
 * const orders = new VarveTable(this, 'Orders', {
 *   warehouse, database: 'shop', table: 'orders', commitMode: 'queue',
 *   ingest: { batchSize: 100, maxBatchingWindow: Duration.seconds(2) },
 * });
 */
export class VarveTable extends Construct {
  /** The warehouse the table lives in. */
  readonly warehouse: Warehouse;
  /** Database name. */
  readonly database: string;
  /** Table name. */
  readonly table: string;
  /** `database.table`. */
  readonly name: string;
  /** How writers commit. */
  readonly commitMode: CommitMode;
  /** Key prefix of the table's files: `<prefix>/<database>.db/<table>`. */
  readonly tablePrefix: string;
  /** Key prefix watched for files to ingest: `<prefix>/inbox/<database>/<table>/`. */
  readonly inboxPrefix: string;
  /** Environment every function of this table (and its consumers) gets. */
  readonly baseEnvironment: Readonly<Record<string, string>>;

  /** Standard queue of record batches to ingest. */
  readonly ingestQueue: Queue;
  /** Where records go that failed validation, with their reasons; read by operators. */
  readonly rejectsQueue: Queue;
  /** Group-commit FIFO queue (queue mode only). */
  readonly commitQueue?: Queue;
  /** Compaction jobs, one message group per bucket. */
  readonly compactQueue: Queue;
  /** Every dead-letter queue of the table (expiry's failure destination included). */
  readonly deadLetterQueues: IQueue[];
  /** Where failed expiry runs land (the scheduled function's on-failure destination). */
  readonly expireFailures: Queue;
  /** How often expiry runs. */
  readonly expireEvery: Duration;
  /** How often the bounded, resumable orphan scan runs. */
  readonly orphanScanEvery: Duration;
  /** The topic the table's alarms notify, if any. */
  readonly alarmTopic?: ITopic;
  /** The thresholds of the table's alarms (its consumers' default). */
  readonly alarmThresholds?: VarveAlarmThresholds;
  /** The table's alarms. */
  readonly alarms: VarveAlarms;
  /** The table's CloudWatch dashboard. */
  readonly dashboard: Dashboard;

  /** Validates records, writes level-0 files, and hands them to the commit queue (or commits). */
  readonly ingestFunction: VarveLambda;
  /** Folds queued file lists into snapshots (queue mode only). */
  readonly commitFunction?: VarveLambda;
  /** Runs one compaction job of one bucket per invocation. */
  readonly compactFunction: VarveLambda;
  /** Expires snapshots on a schedule. */
  readonly expireFunction: VarveLambda;
  /** The Glue Data Catalog table of the Iceberg export (when `glue` was given). */
  readonly glueTable?: AwsCustomResource;

  constructor(scope: Construct, id: string, props: VarveTableProps) {
    super(scope, id);
    for (const [what, value] of [
      ['database', props.database],
      ['table', props.table],
    ] as const) {
      if (!NAME.test(value)) {
        throw new InvalidArgumentError(`${what} name '${value}' is not allowed: use letters, digits, '_' or '-' only`);
      }
    }
    const ingest = props.ingest ?? {};
    const batchSize = ingest.batchSize ?? 100;
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 100) {
      throw new InvalidArgumentError(`ingest.batchSize ${batchSize} is out of range: use an integer from 1 to 100`);
    }
    const { warehouse } = props;
    addVarveDeployRules(this);
    this.warehouse = warehouse;
    this.database = props.database;
    this.table = props.table;
    this.name = `${props.database}.${props.table}`;
    this.commitMode = props.commitMode ?? 'queue';
    this.tablePrefix = warehouse.tablePrefix(props.database, props.table);
    this.inboxPrefix = warehouse.inboxPrefix(props.database, props.table);
    this.baseEnvironment = {
      VARVE_WAREHOUSE: warehouse.uri,
      VARVE_CATALOG_TABLE: warehouse.catalog.tableName,
      VARVE_TABLE: this.name,
      POWERTOOLS_SERVICE_NAME: VARVE_SERVICE_NAME,
      POWERTOOLS_METRICS_NAMESPACE: VARVE_METRICS_NAMESPACE,
    };
    tagAll(this, { ...warehouse.tags, 'varve:table': this.name, ...props.tags });

    const queues = this.createQueues();
    this.ingestQueue = queues.ingest.queue;
    this.rejectsQueue = queues.rejects;
    this.compactQueue = queues.compact.queue;
    this.expireFailures = queues.expireFailures;
    this.commitQueue = queues.commit?.queue;
    this.deadLetterQueues = [queues.ingest.deadLetterQueue, queues.compact.deadLetterQueue, queues.expireFailures];
    if (queues.commit) this.deadLetterQueues.push(queues.commit.deadLetterQueue);

    this.ingestFunction = this.createIngest(ingest, batchSize, queues.ingest.deadLetterQueue);
    if (this.commitQueue) this.commitFunction = this.createCommit(this.commitQueue);
    this.compactFunction = this.createCompaction(props.compaction ?? {});
    this.expireEvery = props.expireEvery ?? Duration.minutes(15);
    this.orphanScanEvery = props.orphanScanEvery ?? Duration.days(1);
    this.expireFunction = this.createExpiry();

    if (props.glue) {
      const committers = [this.commitFunction ?? this.ingestFunction, this.compactFunction];
      this.glueTable = this.registerInGlue(props.glue, committers);
    }

    this.alarmTopic = props.alarmTopic ?? warehouse.alarmTopic;
    this.alarmThresholds = props.alarmThresholds;
    this.alarms = new VarveAlarms(this, 'Alarms', { topic: this.alarmTopic, thresholds: props.alarmThresholds });
    this.alarms.watchTable(this);
    this.dashboard = createTableDashboard(this, 'Dashboard', this, this.alarms);
  }

  /**
   * The table's queues: ingest (standard), rejects (terminal), compaction (FIFO, a group per
   * bucket), expiry failures, and in queue mode the group-commit FIFO queue (one message group
   * per table: commits of a table are serialised and folded in order).
   */
  private createQueues(): {
    ingest: QueueWithDlq;
    rejects: Queue;
    compact: QueueWithDlq;
    expireFailures: Queue;
    commit?: QueueWithDlq;
  } {
    const encryptionKey = this.warehouse.encryptionKey;
    const ingest = createQueueWithDlq(this, 'IngestQueue', {
      fifo: false,
      consumerTimeout: INGEST_TIMEOUT,
      encryptionKey,
      tags: { warehouse: this.warehouse.uri, table: this.name, queue: 'ingest' },
    });
    const rejects = new Queue(this, 'RejectsQueue', {
      ...encryptionOf(encryptionKey),
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    const compact = createQueueWithDlq(this, 'CompactQueue', {
      tags: { warehouse: this.warehouse.uri, table: this.name, queue: 'compaction' },
      fifo: true,
      highThroughput: true,
      consumerTimeout: COMPACT_TIMEOUT,
      encryptionKey,
    });
    const expireFailures = createFailureQueue(this, 'ExpireDlq', encryptionKey);
    const commit =
      this.commitMode === 'queue'
        ? createQueueWithDlq(this, 'CommitQueue', {
            fifo: true,
            consumerTimeout: COMMIT_TIMEOUT,
            encryptionKey,
            tags: { warehouse: this.warehouse.uri, table: this.name, queue: 'commit' },
          })
        : undefined;
    return { ingest, rejects, compact, expireFailures, commit };
  }

  /** The ingest function, fed by the ingest queue and by the S3 inbox (S3 → EventBridge → ingest). */
  private createIngest(ingest: IngestOptions, batchSize: number, deadLetterQueue: Queue): VarveLambda {
    const { warehouse } = this;
    const fn = createVarveFunction(this, 'Ingest', {
      ...this.functionDefaults(),
      entry: handlerEntry('ingest'),
      description: `varve ingest for ${this.name}`,
      timeout: INGEST_TIMEOUT,
      memorySize: ingest.memorySize ?? 1769,
      environment: {
        ...this.baseEnvironment,
        ...this.writerEnvironment(),
        VARVE_REJECTS_QUEUE_URL: this.rejectsQueue.queueUrl,
      },
    });
    this.grantWrite(fn);
    // Reads inbox files, and deletes each once its rows landed (the inbox lifecycle rule is the backstop).
    grantObjects(fn, warehouse.bucket, this.inboxPrefix.replace(/\/$/, ''), ['s3:GetObject', 's3:DeleteObject']);
    this.rejectsQueue.grantSendMessages(fn);
    fn.addEventSource(
      new SqsEventSource(this.ingestQueue, {
        batchSize,
        maxBatchingWindow: ingest.maxBatchingWindow ?? Duration.seconds(2),
        maxConcurrency: ingest.maxConcurrency,
        reportBatchItemFailures: true,
      }),
    );
    // S3 sends its EventBridge notifications to the account's default bus, whatever bus varve uses.
    warehouse.bucket.enableEventBridgeNotification();
    // An inbox event that ingest keeps failing on (async invoke: 2 retries) ends in the ingest DLQ
    // (standard, as EventBridge and Lambda destinations require).
    fn.configureAsyncInvoke({ onFailure: new SqsDestination(deadLetterQueue), retryAttempts: 2 });
    new Rule(this, 'InboxRule', {
      description: `files dropped under ${this.inboxPrefix} → varve ingest`,
      eventPattern: {
        source: ['aws.s3'],
        detailType: ['Object Created'],
        detail: { bucket: { name: [warehouse.bucket.bucketName] }, object: { key: Match.prefix(this.inboxPrefix) } },
      },
      targets: [new LambdaFunction(fn, { deadLetterQueue, retryAttempts: 8 })],
    });
    return fn;
  }

  /** The group-commit function on the commit FIFO queue (queue mode). */
  private createCommit(commitQueue: Queue): VarveLambda {
    const fn = createVarveFunction(this, 'Commit', {
      ...this.functionDefaults(),
      entry: handlerEntry('commit'),
      description: `varve group commit for ${this.name}`,
      timeout: COMMIT_TIMEOUT,
      environment: {
        ...this.baseEnvironment,
        VARVE_COMPACT_QUEUE_URL: this.compactQueue.queueUrl,
        VARVE_EVENT_BUS_NAME: this.warehouse.eventBus.eventBusName,
        // A commit message that can never be committed goes there instead of blocking the queue.
        VARVE_REJECTS_QUEUE_URL: this.rejectsQueue.queueUrl,
      },
    });
    this.grantCommit(fn);
    this.rejectsQueue.grantSendMessages(fn);
    fn.addEventSource(new SqsEventSource(commitQueue, { batchSize: 10, reportBatchItemFailures: true }));
    return fn;
  }

  /** The compaction function: one compaction run over up to 10 bucket jobs per invocation. */
  private createCompaction(compaction: CompactionOptions): VarveLambda {
    const { warehouse } = this;
    const fn = createVarveFunction(this, 'Compact', {
      ...this.functionDefaults(),
      entry: handlerEntry('compact'),
      description: `varve compaction for ${this.name}`,
      timeout: COMPACT_TIMEOUT,
      memorySize: compaction.memorySize ?? 3008,
      ephemeralStorageSize: compaction.ephemeralStorageSize ?? Size.gibibytes(2),
      environment: {
        ...this.baseEnvironment,
        VARVE_EVENT_BUS_NAME: warehouse.eventBus.eventBusName,
        // A run that leaves a bucket still due sends its next job (lib/snapshot/queued-jobs.ts).
        VARVE_COMPACT_QUEUE_URL: this.compactQueue.queueUrl,
      },
    });
    this.grantRead(fn);
    this.compactQueue.grantSendMessages(fn);
    // Output files stream out as multipart uploads; a failed one is aborted so no parts stay billed.
    grantObjects(fn, warehouse.bucket, this.tablePrefix, ['s3:PutObject', 's3:AbortMultipartUpload']);
    // A failed job removes the files it wrote; a lost commit race, the manifests it wrote; a job
    // that starts, its bucket's "job queued" marker.
    grantTableDeletes(fn, warehouse.bucket, this.tablePrefix, ['data', 'manifest', 'compaction']);
    warehouse.grantKeyWrite(fn);
    warehouse.eventBus.grantPutEventsTo(fn);
    // Up to 10 jobs (the FIFO maximum) per invocation, run as one compaction run: one COMPACT
    // snapshot for all their buckets (functions/compact.ts). A busy table's jobs of many buckets
    // then cost one snapshot, one discovery round and one expiry, not one each.
    fn.addEventSource(
      new SqsEventSource(this.compactQueue, {
        batchSize: 10,
        maxConcurrency: compaction.maxConcurrency,
        reportBatchItemFailures: true,
      }),
    );
    return fn;
  }

  /** The expiry function, on two schedules: snapshot expiry and the bounded orphan scan. */
  private createExpiry(): VarveLambda {
    const { warehouse } = this;
    const fn = createVarveFunction(this, 'Expire', {
      ...this.functionDefaults(),
      entry: handlerEntry('expire'),
      description: `varve snapshot expiry for ${this.name}`,
      timeout: EXPIRE_TIMEOUT,
      environment: { ...this.baseEnvironment },
    });
    this.grantRead(fn);
    grantObjects(fn, warehouse.bucket, this.tablePrefix, ['s3:PutObject']);
    // Expiry is the one function that deletes snapshots and what only they referenced.
    grantTableDeletes(fn, warehouse.bucket, this.tablePrefix, ['all']);
    warehouse.grantKeyWrite(fn);
    // A scheduled EventBridge rule rather than EventBridge Scheduler: LocalStack's Scheduler
    // stores schedules but never fires them, and rules need no extra role.
    // A run that fails twice more (async retries) lands in ExpireDlq with its error, and so does
    // an event EventBridge could not deliver: a failed run is a message, not a log line.
    fn.configureAsyncInvoke({ onFailure: new SqsDestination(this.expireFailures), retryAttempts: 2 });
    new Rule(this, 'ExpireSchedule', {
      description: `varve snapshot expiry for ${this.name}`,
      schedule: Schedule.rate(this.expireEvery),
      targets: [new LambdaFunction(fn, { retryAttempts: 2, deadLetterQueue: this.expireFailures })],
    });
    // The safety net for orphans no pending registration names: one bounded slice of a full
    // listing per run, resumed by the next run (functions/expire.ts, `{ orphanScan: true }`).
    new Rule(this, 'OrphanScanSchedule', {
      description: `varve bounded orphan scan for ${this.name}`,
      schedule: Schedule.rate(this.orphanScanEvery),
      targets: [
        new LambdaFunction(fn, {
          event: RuleTargetInput.fromObject({ orphanScan: true }),
          retryAttempts: 2,
          deadLetterQueue: this.expireFailures,
        }),
      ],
    });
    return fn;
  }

  /**
   * What every function of the table and its consumers shares besides the house settings: log
   * groups that follow the warehouse's removal policy and its customer key.
   */
  functionDefaults(): Pick<VarveFunctionProps, 'logRemovalPolicy' | 'logEncryptionKey'> {
    return { logRemovalPolicy: this.warehouse.removalPolicy, logEncryptionKey: this.warehouse.encryptionKey };
  }

  /**
   * The Glue database (unless it exists) and an Iceberg EXTERNAL_TABLE whose `metadata_location`
   * starts at the table's metadata folder; `committers` (the functions that export) get the Glue
   * names in VARVE_GLUE_DATABASE / VARVE_GLUE_TABLE and glue:GetTable, UpdateTable and CreateTable (to
   * create it again when it is missing) on it.
   */
  private registerInGlue(glue: VarveGlueOptions, committers: VarveLambda[]): AwsCustomResource {
    const tableName = glue.table ?? this.table;
    for (const [what, value] of [
      ['glue.database', glue.database],
      ['glue.table', tableName],
    ] as const) {
      if (!GLUE_NAME.test(value)) {
        throw new InvalidArgumentError(
          `${what} '${value}' is not a Glue name Athena accepts: use lower-case letters, digits and '_' only`,
        );
      }
    }
    const stack = Stack.of(this);
    const location = `s3://${this.warehouse.bucket.bucketName}/${this.tablePrefix}`;
    let database: CfnDatabase | undefined;
    if (!glue.databaseExists) {
      database = new CfnDatabase(this, 'GlueDatabase', {
        catalogId: stack.account,
        databaseInput: { name: glue.database },
      });
    }
    const resources = [
      `arn:${stack.partition}:glue:${stack.region}:${stack.account}:catalog`,
      `arn:${stack.partition}:glue:${stack.region}:${stack.account}:database/${glue.database}`,
      `arn:${stack.partition}:glue:${stack.region}:${stack.account}:table/${glue.database}/${tableName}`,
    ];
    // Not an AWS::Glue::Table: CloudFormation would put its TableInput back on every update of
    // it, and with it the first metadata_location, while the functions move metadata_location to
    // each new export at run time. Created once (CreateTable; an update creates it only when it
    // is missing, e.g. under a new name), deleted with the stack.
    const createTable = {
      service: 'Glue',
      action: 'createTable',
      parameters: {
        DatabaseName: glue.database,
        TableInput: {
          Name: tableName,
          Description: `varve table ${this.name} (Iceberg export)`,
          TableType: 'EXTERNAL_TABLE',
          // The first export replaces the folder with its v<N>.metadata.json (lib/aws/glue.ts).
          Parameters: { table_type: 'ICEBERG', metadata_location: `${location}/metadata/` },
          StorageDescriptor: { Location: location },
        },
      },
      physicalResourceId: PhysicalResourceId.of(`${glue.database}.${tableName}`),
      ignoreErrorCodesMatching: 'AlreadyExistsException',
    };
    const table = new AwsCustomResource(this, 'GlueTable', {
      resourceType: GLUE_TABLE_RESOURCE_TYPE,
      onCreate: createTable,
      onUpdate: createTable,
      onDelete: {
        service: 'Glue',
        action: 'deleteTable',
        parameters: { DatabaseName: glue.database, Name: tableName },
        ignoreErrorCodesMatching: 'EntityNotFoundException',
      },
      policy: AwsCustomResourcePolicy.fromStatements([
        new PolicyStatement({ actions: ['glue:CreateTable', 'glue:DeleteTable', 'glue:GetDatabase'], resources }),
      ]),
      installLatestAwsSdk: false,
    });
    if (database) table.node.addDependency(database);
    for (const fn of committers) {
      fn.addEnvironment('VARVE_GLUE_DATABASE', glue.database);
      fn.addEnvironment('VARVE_GLUE_TABLE', tableName);
      fn.addToRolePolicy(
        new PolicyStatement({ actions: ['glue:CreateTable', 'glue:GetTable', 'glue:UpdateTable'], resources }),
      );
    }
    return table;
  }

  /** Lets a principal read the table: get and list its files, look it up in the catalog. */
  grantRead(grantee: IGrantable): void {
    this.warehouse.grantKeyRead(grantee);
    grantObjects(grantee, this.warehouse.bucket, this.tablePrefix, ['s3:GetObject']);
    grantListUnder(grantee, this.warehouse.bucket, this.tablePrefix);
    this.warehouse.grantCatalogRead(grantee);
  }

  /**
   * Lets a principal write rows into the table the way ingest does: write data files, then send
   * them to the commit queue (queue mode) or commit them itself (direct mode).
   */
  grantWrite(grantee: IGrantable): void {
    if (this.commitQueue) {
      this.grantRead(grantee);
      grantObjects(grantee, this.warehouse.bucket, this.tablePrefix, ['s3:PutObject']);
      this.warehouse.grantKeyWrite(grantee);
      this.commitQueue.grantSendMessages(grantee);
    } else {
      this.grantCommit(grantee);
    }
  }

  /**
   * Environment a writer of this table needs besides {@link baseEnvironment}: the commit mode and
   * where commits, compaction jobs and commit events go.
   */
  writerEnvironment(): Record<string, string> {
    return {
      VARVE_COMMIT_MODE: this.commitMode,
      ...(this.commitQueue ? { VARVE_COMMIT_QUEUE_URL: this.commitQueue.queueUrl } : {}),
      VARVE_COMPACT_QUEUE_URL: this.compactQueue.queueUrl,
      VARVE_EVENT_BUS_NAME: this.warehouse.eventBus.eventBusName,
    };
  }

  /**
   * What a committer needs: manifests and snapshots written (a lost race deletes the manifests it
   * wrote, a refused batch its data files), compaction jobs enqueued, `Snapshot Committed` events put.
   */
  private grantCommit(grantee: IGrantable): void {
    this.grantRead(grantee);
    grantObjects(grantee, this.warehouse.bucket, this.tablePrefix, ['s3:PutObject']);
    // A refused batch removes its data files; a lost race, the manifests it wrote. Never a
    // snapshot, a schema or a consumer file.
    grantTableDeletes(grantee, this.warehouse.bucket, this.tablePrefix, ['data', 'manifest', 'pending']);
    this.warehouse.grantKeyWrite(grantee);
    this.compactQueue.grantSendMessages(grantee);
    this.warehouse.eventBus.grantPutEventsTo(grantee);
  }
}

/** Tags every resource under `scope` (CloudFormation resources that take tags). */
export function tagAll(scope: Construct, tags: Record<string, string>): void {
  for (const [key, value] of Object.entries(tags)) Tags.of(scope).add(key, value);
}
