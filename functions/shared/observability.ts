/**
 * Logging and metrics of the varve functions through Powertools: JSON logs, and CloudWatch
 * metrics in Embedded Metric Format (namespace POWERTOOLS_METRICS_NAMESPACE, `service` from
 * POWERTOOLS_SERVICE_NAME on every metric). The metric names and dimensions are the ones
 * infra/alarms.ts watches; a metric with other dimensions would be another metric to CloudWatch.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { VARVE_METRICS } from '../../lib/aws-contract.js';

/** The custom metrics varve emits: the names infra/alarms.ts watches (declared in lib/aws-contract.ts). */
export const METRIC = VARVE_METRICS;

export type MetricName = (typeof METRIC)[keyof typeof METRIC];

/** Units the varve metrics use. */
export const UNIT = { ms: MetricUnit.Milliseconds, count: MetricUnit.Count, seconds: MetricUnit.Seconds } as const;

let logger: Logger | undefined;
let metrics: Metrics | undefined;

/** The functions' logger; created on first use, so it reads the environment the function runs with. */
export function log(): Logger {
  return (logger ??= new Logger());
}

/**
 * Emits one data point at once, with exactly `dimensions` (plus `service`): a single-metric
 * flush, so metrics of different dimension sets (a table's commits, a consumer's lag) never mix.
 */
export function emitMetric(name: MetricName, unit: (typeof UNIT)[keyof typeof UNIT], value: number, dimensions: Record<string, string>): void {
  metrics ??= new Metrics();
  const single = metrics.singleMetric();
  single.addDimensions(dimensions);
  single.addMetric(name, unit, value);
}
