/**
 * Logging, metrics and tracing of the varve functions through Powertools: JSON logs carrying the
 * Lambda context (request id, function, cold start) and the function's table and consumer;
 * CloudWatch metrics in Embedded Metric Format (namespace POWERTOOLS_METRICS_NAMESPACE, `service`
 * from POWERTOOLS_SERVICE_NAME on every metric); X-Ray traces with a subsegment per handler run
 * and one per AWS call (the Tracer wraps every SDK client varve makes, through
 * lib/store/client-decorator.ts). The metric names and dimensions are the ones infra/alarms.ts
 * watches; a metric with other dimensions would be another metric to CloudWatch.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';
import type { Context } from 'aws-lambda';
import { VARVE_METRICS } from '../../lib/aws-contract.js';
import { addAwsClientDecorator } from '../../lib/store/client-decorator.js';
import { useTelemetry } from '../../lib/aws/telemetry.js';

/** The custom metrics varve emits: the names infra/alarms.ts watches (declared in lib/aws-contract.ts). */
export const METRIC = VARVE_METRICS;

export type MetricName = (typeof METRIC)[keyof typeof METRIC];

/** Units the varve metrics use. */
export const UNIT = { ms: MetricUnit.Milliseconds, count: MetricUnit.Count, seconds: MetricUnit.Seconds } as const;

let logger: Logger | undefined;
let metrics: Metrics | undefined;
let tracer: Tracer | undefined;

/**
 * The functions' logger; created on first use, so it reads the environment the function runs
 * with. Every line carries `table` (and `consumer`) from VARVE_TABLE and VARVE_CONSUMER_ID.
 */
export function log(): Logger {
  if (!logger) {
    const keys = { table: process.env.VARVE_TABLE, consumer: process.env.VARVE_CONSUMER_ID };
    logger = new Logger({ persistentKeys: Object.fromEntries(Object.entries(keys).filter(([, v]) => v)) });
  }
  return logger;
}

/** The functions' tracer: active only inside Lambda with tracing on (POWERTOOLS_TRACE_ENABLED, default true). */
export function trace(): Tracer {
  return (tracer ??= new Tracer());
}

// Every SDK client made from here on (S3 store, DynamoDB catalog, SQS, EventBridge) is traced:
// a disabled tracer returns the client untouched.
addAwsClientDecorator((client) => trace().captureAWSv3Client(client));

// The AWS side of lib (lib/aws) logs and counts through the functions' logger and metrics.
useTelemetry({
  log: {
    info: (message, fields) => (fields ? log().info(message, fields) : log().info(message)),
    warn: (message, fields) => (fields ? log().warn(message, fields) : log().warn(message)),
    error: (message, fields) => (fields ? log().error(message, fields) : log().error(message)),
  },
  metric: (name, unit, value, dimensions) => emitMetric(name, unit, value, dimensions),
});

/**
 * Wraps a handler with the Lambda context: the logger gets the request id, function name and
 * cold start for every line of the invocation; the trace gets a `## handler` subsegment
 * annotated with the cold start and service, and the error if the handler throws.
 *
 * @example
 * export const handler = instrumented(createExpireHandler());
 */
export function instrumented<E, R>(
  handler: (event: E, context?: Context) => Promise<R>,
): (event: E, context?: Context) => Promise<R> {
  return async (event, context) => {
    if (context) log().addContext(context);
    const t = trace();
    const segment = t.isTracingEnabled() ? t.getSegment() : undefined;
    const subsegment = segment?.addNewSubsegment(`## ${process.env._HANDLER ?? 'handler'}`);
    if (subsegment) t.setSegment(subsegment);
    if (segment) {
      t.annotateColdStart();
      t.addServiceNameAnnotation();
    }
    try {
      return await handler(event, context);
    } catch (e) {
      if (segment) t.addErrorAsMetadata(e as Error);
      throw e;
    } finally {
      if (segment && subsegment) {
        subsegment.close();
        t.setSegment(segment);
      }
    }
  };
}

/**
 * Emits one data point at once, with exactly `dimensions` (plus `service`): a single-metric
 * flush, so metrics of different dimension sets (a table's commits, a consumer's lag) never mix.
 */
export function emitMetric(
  name: MetricName,
  unit: (typeof UNIT)[keyof typeof UNIT],
  value: number,
  dimensions: Record<string, string>,
): void {
  metrics ??= new Metrics();
  const single = metrics.singleMetric();
  single.addDimensions(dimensions);
  single.addMetric(name, unit, value);
}
