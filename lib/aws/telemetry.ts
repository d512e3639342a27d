/**
 * Where the AWS side of varve (this folder: what the functions do after a commit, inbox files,
 * rejects, the built-in sinks, Glue) logs and counts: structured log lines and CloudWatch metrics
 * of the names infra/alarms.ts watches (lib/aws-contract.ts). The Lambda functions install
 * Powertools' logger and metrics here (functions/shared/observability.ts); until something is
 * installed, lines go to stderr as JSON and metrics nowhere.
 */
import { VARVE_METRICS } from '../aws-contract.js';

/** Structured log lines: a message and fields. */
export interface AwsLog {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** The custom metrics varve emits (declared in lib/aws-contract.ts). */
export const METRIC = VARVE_METRICS;

/** Units the varve metrics use (CloudWatch's names). */
export const UNIT = { ms: 'Milliseconds', count: 'Count', seconds: 'Seconds' } as const;

/** A CloudWatch unit of UNIT. */
export type MetricUnitName = (typeof UNIT)[keyof typeof UNIT];

/** Where lines and metrics go. */
export interface Telemetry {
  log: AwsLog;
  /** One data point with exactly `dimensions`. */
  metric(
    name: (typeof METRIC)[keyof typeof METRIC],
    unit: MetricUnitName,
    value: number,
    dimensions: Record<string, string>,
  ): void;
}

const line =
  (level: string) =>
  (message: string, fields: Record<string, unknown> = {}): void => {
    const error = fields.error instanceof Error ? { error: `${fields.error.name}: ${fields.error.message}` } : {};
    console.error(JSON.stringify({ level, message, ...fields, ...error }));
  };

let current: Telemetry = { log: { info: line('INFO'), warn: line('WARN'), error: line('ERROR') }, metric: () => {} };

/** Makes `t` receive every line and metric from here on (the functions: Powertools). */
export function useTelemetry(t: Telemetry): void {
  current = t;
}

/** The installed log. */
export function log(): AwsLog {
  return current.log;
}

/** Emits one data point with exactly `dimensions` through the installed metrics. */
export function emitMetric(
  name: (typeof METRIC)[keyof typeof METRIC],
  unit: MetricUnitName,
  value: number,
  dimensions: Record<string, string>,
): void {
  current.metric(name, unit, value, dimensions);
}
