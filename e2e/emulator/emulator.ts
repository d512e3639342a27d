/**
 * Runs a synthesised cloud assembly (cdk.out) the way a `cdk deploy` would: the stateful
 * resources on moto (e2e/aws/deploy.ts), each function's asset bundle in emulated Lambda
 * containers (lambda.ts), the SQS event source mappings (esm.ts), and the EventBridge rules:
 * pattern rules on the template's buses are created on moto with a tap queue each (moto matches
 * the pattern), scheduled rules fire when the scenario's clock says so; targets are Lambda
 * functions (asynchronous invoke with the EventInvokeConfig's retries and on-failure destination)
 * or SQS queues (with the target's message group). Every SDK call of every container, and every
 * poll the mappings make with a function's role, goes through the IAM audit.
 *
 * Service faults ({@link Emulator.setFaults}): S3's 409/503 answers inside the containers and the
 * Lambda service's throttling. A throttled asynchronous invocation goes back to Lambda's event
 * queue and is tried again, 1 s doubling up to 5 min, without counting as one of its retries, as
 * AWS documents: "For throttling errors (429) and system errors (500-series), Lambda returns the
 * event to the queue and attempts to run the function again for up to 6 hours by default. The
 * retry interval increases exponentially from 1 second after the first attempt to a maximum of 5
 * minutes." (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html);
 * here the back-off is capped at 5 s, and ends when the emulator stops.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { EventBridgeClient, PutEventsCommand, PutRuleCommand, PutTargetsCommand } from '@aws-sdk/client-eventbridge';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { deployTemplate, type Deployment } from '../aws/deploy.js';
import {
  ACCOUNT,
  functionsOf,
  logicalIdOf,
  readTemplate,
  REGION,
  resourcesOfType,
  type CfnTemplate,
} from '../aws/template.js';
import { IamAudit } from '../iam/audit.js';
import { onCall } from '../iam/recorder.js';
import type { RecordedCall } from '../iam/requests.js';
import { EmulatedMapping, noteVisibilityChange, type MappingFaults } from './esm.js';
import { EmulatedFunction, type ServiceFaults } from './lambda.js';

/** One EventBridge rule target, resolved. */
interface Target {
  arn: string;
  messageGroupId?: string;
  deadLetterArn?: string;
}

interface RuleSpec {
  logicalId: string;
  schedule?: string;
  busName?: string;
  targets: Target[];
  tapUrl?: string;
}

/** Options of an emulator run. */
export interface EmulatorOptions {
  /** The cloud assembly folder (`cdk.out`). */
  assembly: string;
  stack: string;
  /** How much faster than real time visibility timeouts pass. */
  timeScale: number;
  /** Extra environment for every container (emulation-only, e.g. a fault-state folder). */
  extraEnv?: Record<string, string>;
  faults?: MappingFaults;
  /** Every line a container prints. */
  onLog?(fn: string, line: string): void;
  logFile?: string;
}

/** The emulated deployment. */
export class Emulator {
  readonly functions = new Map<string, EmulatedFunction>();
  readonly mappings: EmulatedMapping[] = [];
  readonly rules: RuleSpec[] = [];
  readonly audit: IamAudit;
  readonly calls: RecordedCall[] = [];
  private readonly sqs = new SQSClient({});
  private readonly events = new EventBridgeClient({});
  private readonly background = new Set<Promise<unknown>>();
  private running = false;
  private tapLoop?: Promise<void>;
  private stopAudit?: () => void;
  private faultMode?: ServiceFaults;
  asyncFailures = 0;
  /** Asynchronous invocations the service refused and tried again. */
  asyncThrottles = 0;

  private constructor(
    readonly template: CfnTemplate,
    readonly deployment: Deployment,
    readonly options: EmulatorOptions,
  ) {
    this.audit = new IamAudit(template, deployment.resolver);
  }

  /** Deploys the assembly's stack onto moto and prepares its functions, mappings and rules. */
  static async deploy(options: EmulatorOptions): Promise<Emulator> {
    const template = readTemplate(path.join(options.assembly, `${options.stack}.template.json`));
    // Tagged as CloudFormation tags them: `varve redrive` finds the queues by their tags.
    const deployment = await deployTemplate(template, { tagQueues: true });
    const emu = new Emulator(template, deployment, options);
    await emu.prepare();
    return emu;
  }

  /** The resolved environment of a function (as CloudFormation sets it). */
  envOf(logicalId: string): Record<string, string> {
    const f = functionsOf(this.template).find((x) => x.logicalId === logicalId)!;
    return this.deployment.resolver.resolve(f.environment) as Record<string, string>;
  }

  /** Physical value (`Ref`) of a resource. */
  ref(logicalId: string): string {
    return this.deployment.physical.get(logicalId)!.ref;
  }

  private record(call: RecordedCall): void {
    this.calls.push(call);
    this.audit.record(call);
    noteVisibilityChange(call);
  }

  private async prepare(): Promise<void> {
    const { template, deployment, options } = this;
    this.stopAudit = onCall((c) => this.record(c));
    const invokeConfig = new Map<string, { retries: number; onFailure?: string }>();
    for (const [, r] of resourcesOfType(template, 'AWS::Lambda::EventInvokeConfig')) {
      const p = r.Properties!;
      invokeConfig.set(logicalIdOf(p.FunctionName)!, {
        retries: (p.MaximumRetryAttempts as number | undefined) ?? 2,
        onFailure: p.DestinationConfig?.OnFailure?.Destination
          ? deployment.resolver.resolve(p.DestinationConfig.OnFailure.Destination)
          : undefined,
      });
    }
    this.invokeConfig = invokeConfig;
    for (const f of functionsOf(template)) {
      if (!f.assetPath) continue; // inline code (CDK's own custom-resource handlers): not varve's
      const bundle = path.join(options.assembly, f.assetPath, 'index.js');
      if (!existsSync(bundle)) throw new Error(`function ${f.logicalId}: no bundle at ${bundle}; run cdk synth first`);
      this.functions.set(
        f.logicalId,
        new EmulatedFunction(
          {
            logicalId: f.logicalId,
            bundle,
            handler: f.handler,
            memoryMb: f.memoryMb,
            timeoutSeconds: f.timeoutSeconds,
            environment: {
              ...(deployment.resolver.resolve(f.environment) as Record<string, string>),
              ...options.extraEnv,
            },
            reservedConcurrency: f.reservedConcurrency,
          },
          {
            onCall: (c) => this.record(c),
            onLog: (fn, line) => options.onLog?.(fn, line),
            logFile: options.logFile,
            faults: () => this.faultMode,
          },
        ),
      );
    }
    for (const [id, r] of resourcesOfType(template, 'AWS::Lambda::EventSourceMapping')) {
      const p = r.Properties!;
      const queueId = logicalIdOf(p.EventSourceArn)!;
      const queue = template.Resources[queueId];
      const fn = this.functions.get(logicalIdOf(p.FunctionName)!);
      if (!fn) throw new Error(`mapping ${id} targets a function without a bundle`);
      this.mappings.push(
        new EmulatedMapping(
          {
            logicalId: id,
            queueUrl: this.ref(queueId),
            queueArn: deployment.physical.get(queueId)!.attrs.Arn,
            fifo: Boolean(queue.Properties?.FifoQueue),
            batchSize: (p.BatchSize as number | undefined) ?? 10,
            windowSeconds: (p.MaximumBatchingWindowInSeconds as number | undefined) ?? 0,
            reportBatchItemFailures: ((p.FunctionResponseTypes as string[] | undefined) ?? []).includes(
              'ReportBatchItemFailures',
            ),
            maxConcurrency: p.ScalingConfig?.MaximumConcurrency as number | undefined,
            visibilityTimeout: (queue.Properties?.VisibilityTimeout as number | undefined) ?? 30,
          },
          fn,
          options.timeScale,
          options.faults,
        ),
      );
    }
    for (const [id, r] of resourcesOfType(template, 'AWS::Events::Rule')) {
      const p = r.Properties!;
      const targets: Target[] = (p.Targets as Record<string, any>[]).map((t) => ({
        arn: deployment.resolver.resolve(t.Arn) as string,
        messageGroupId: t.SqsParameters?.MessageGroupId as string | undefined,
        deadLetterArn: t.DeadLetterConfig?.Arn
          ? (deployment.resolver.resolve(t.DeadLetterConfig.Arn) as string)
          : undefined,
      }));
      const rule: RuleSpec = { logicalId: id, targets };
      if (p.ScheduleExpression) rule.schedule = p.ScheduleExpression as string;
      else {
        rule.busName = p.EventBusName ? (deployment.resolver.resolve(p.EventBusName) as string) : 'default';
        // moto matches the template's own pattern; matching events land in a tap queue.
        const tap = `tap-${id.slice(0, 40)}-${randomUUID().slice(0, 6)}`;
        const q = await this.sqs.send(new CreateQueueCommand({ QueueName: tap }));
        rule.tapUrl = q.QueueUrl!;
        const tapArn = (
          await this.sqs.send(new GetQueueAttributesCommand({ QueueUrl: rule.tapUrl, AttributeNames: ['QueueArn'] }))
        ).Attributes!.QueueArn!;
        const ruleName = `${id.slice(0, 50)}-${randomUUID().slice(0, 6)}`;
        await this.events.send(
          new PutRuleCommand({
            Name: ruleName,
            EventBusName: rule.busName,
            EventPattern: JSON.stringify(deployment.resolver.resolve(p.EventPattern)),
          }),
        );
        await this.events.send(
          new PutTargetsCommand({ Rule: ruleName, EventBusName: rule.busName, Targets: [{ Id: 'tap', Arn: tapArn }] }),
        );
      }
      this.rules.push(rule);
    }
  }

  private invokeConfig = new Map<string, { retries: number; onFailure?: string }>();

  /** Starts the mappings and the event taps. */
  start(): void {
    this.running = true;
    for (const m of this.mappings) m.start();
    this.tapLoop = this.pollTaps();
  }

  /** Stops everything and waits for work in flight. */
  async stop(): Promise<void> {
    this.running = false;
    await this.tapLoop;
    await Promise.all(this.mappings.map((m) => m.stop()));
    await Promise.allSettled([...this.background]);
    for (const f of this.functions.values()) await f.shutdown();
    this.stopAudit?.();
  }

  /** Turns the service faults on (S3 answers in the containers, Lambda throttling), or off with undefined. */
  setFaults(mode: ServiceFaults | undefined): void {
    this.faultMode = mode;
  }

  /** What the faults injected so far: S3 409s and 503s in the containers, invocations the Lambda service refused. */
  injected(): { conflicts: number; slowDowns: number; throttles: number } {
    const fns = [...this.functions.values()];
    const sum = (f: (fn: EmulatedFunction) => number) => fns.reduce((n, fn) => n + f(fn), 0);
    return {
      conflicts: sum((f) => f.injected.get('ConditionalRequestConflict') ?? 0),
      slowDowns: sum((f) => f.injected.get('SlowDown') ?? 0),
      throttles: sum((f) => f.throttled),
    };
  }

  /** Fires the scheduled rule whose logical id matches `pattern` (its targets get a Scheduled Event). */
  fireSchedule(pattern: RegExp): void {
    const rules = this.rules.filter((r) => r.schedule && pattern.test(r.logicalId));
    if (rules.length === 0) throw new Error(`no scheduled rule matches ${pattern}`);
    for (const rule of rules) {
      const event = {
        version: '0',
        id: randomUUID(),
        'detail-type': 'Scheduled Event',
        source: 'aws.events',
        account: ACCOUNT,
        time: new Date().toISOString(),
        region: REGION,
        resources: [`arn:aws:events:${REGION}:${ACCOUNT}:rule/${rule.logicalId}`],
        detail: {},
      };
      for (const t of rule.targets) this.track(this.deliver(t, event));
    }
  }

  /** Puts an event on a bus as a service would (S3's Object Created on the default bus). */
  async putEvent(busName: string, source: string, detailType: string, detail: unknown): Promise<void> {
    const r = await this.events.send(
      new PutEventsCommand({
        Entries: [{ EventBusName: busName, Source: source, DetailType: detailType, Detail: JSON.stringify(detail) }],
      }),
    );
    if (r.FailedEntryCount) throw new Error(`moto refused the event: ${JSON.stringify(r.Entries)}`);
  }

  /** Invokes a function asynchronously (EventBridge, S3): retries, then its on-failure destination. */
  invokeAsync(fnId: string, event: unknown): Promise<void> {
    const p = this.asyncInvoke(fnId, event);
    this.track(p);
    return p;
  }

  /** Work started in the background (async invokes) still running. */
  get pendingAsync(): number {
    return this.background.size;
  }

  private track(p: Promise<unknown>): void {
    this.background.add(p);
    void p.finally(() => this.background.delete(p));
  }

  private async deliver(t: Target, event: Record<string, unknown>): Promise<void> {
    if (t.arn.startsWith('arn:aws:lambda:')) {
      const id = [...this.deployment.physical].find(([, p]) => p.attrs.Arn === t.arn)?.[0];
      if (!id) throw new Error(`rule target ${t.arn} is no function of the deployment`);
      return this.asyncInvoke(id, event);
    }
    if (t.arn.startsWith('arn:aws:sqs:')) {
      const id = [...this.deployment.physical].find(([, p]) => p.attrs.Arn === t.arn)?.[0];
      const url = this.ref(id!);
      await this.sqs.send(
        new SendMessageCommand({
          QueueUrl: url,
          MessageBody: JSON.stringify(event),
          ...(t.messageGroupId ? { MessageGroupId: t.messageGroupId } : {}),
        }),
      );
      return;
    }
    throw new Error(`rule target ${t.arn}: the emulator delivers to Lambda functions and SQS queues only`);
  }

  private async asyncInvoke(fnId: string, event: unknown): Promise<void> {
    const fn = this.functions.get(fnId);
    if (!fn) throw new Error(`no emulated function ${fnId}`);
    const cfg = this.invokeConfig.get(fnId) ?? { retries: 2 };
    let last;
    for (let attempt = 0, throttleWaitMs = 1000; attempt <= cfg.retries; ) {
      last = await fn.invoke(event);
      if (last.ok) return;
      if (last.kind === 'throttle' && this.running) {
        this.asyncThrottles++;
        await new Promise((r) => setTimeout(r, throttleWaitMs));
        throttleWaitMs = Math.min(5000, 2 * throttleWaitMs);
        continue;
      }
      attempt++;
    }
    this.asyncFailures++;
    if (cfg.onFailure && last && !last.ok) {
      const id = [...this.deployment.physical].find(([, p]) => p.attrs.Arn === cfg.onFailure)?.[0];
      // The record Lambda sends to an on-failure destination.
      const record = {
        version: '1.0',
        timestamp: new Date().toISOString(),
        requestContext: {
          requestId: randomUUID(),
          functionArn: this.deployment.physical.get(fnId)!.attrs.Arn,
          condition: 'RetriesExhausted',
          approximateInvokeCount: cfg.retries + 1,
        },
        requestPayload: event,
        responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' },
        responsePayload: { errorType: last.error.name, errorMessage: last.error.message },
      };
      const fifo = this.ref(id!).endsWith('.fifo');
      await this.sqs.send(
        new SendMessageCommand({
          QueueUrl: this.ref(id!),
          MessageBody: JSON.stringify(record),
          ...(fifo ? { MessageGroupId: 'lambda', MessageDeduplicationId: randomUUID() } : {}),
        }),
      );
    }
  }

  private async pollTaps(): Promise<void> {
    let idleMs = 150;
    while (this.running) {
      let any = false;
      for (const rule of this.rules) {
        if (!rule.tapUrl) continue;
        const r = await this.sqs.send(
          new ReceiveMessageCommand({ QueueUrl: rule.tapUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
        );
        for (const m of r.Messages ?? []) {
          any = true;
          const event = JSON.parse(m.Body!) as Record<string, unknown>;
          for (const t of rule.targets) this.track(this.deliver(t, event));
        }
        if (r.Messages?.length) {
          await this.sqs.send(
            new DeleteMessageBatchCommand({
              QueueUrl: rule.tapUrl,
              Entries: r.Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })),
            }),
          );
        }
      }
      if (!any) await new Promise((r) => setTimeout(r, idleMs));
      idleMs = any ? 150 : Math.min(1000, idleMs * 2);
    }
  }

  /** Visible plus in-flight messages of a queue. */
  async depth(queueLogicalId: string): Promise<number> {
    const a = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: this.ref(queueLogicalId),
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      }),
    );
    return (
      Number(a.Attributes!.ApproximateNumberOfMessages) +
      Number(a.Attributes!.ApproximateNumberOfMessagesNotVisible) +
      Number(a.Attributes!.ApproximateNumberOfMessagesDelayed ?? 0)
    );
  }

  /** Logical ids of the queues of the template. */
  queues(): string[] {
    return resourcesOfType(this.template, 'AWS::SQS::Queue').map(([id]) => id);
  }

  /** A folder for emulation-only state. */
  static stateDir(root: string): string {
    mkdirSync(root, { recursive: true });
    return root;
  }
}
