/** Names shared by the e2e app (e2e/app.ts) and the run that deploys it (e2e/run.ts, e2e/day.ts). */

/** The stack name in the cloud assembly cdk.out.e2e. */
export const E2E_STACK_NAME = 'VarveE2E';
/** The consumer the e2e stack streams to its fault-injecting sink. */
export const E2E_CONSUMER_ID = 'e2e';
/**
 * The reader timeout of the e2e consumer: short, so that a sink slower than it (e2e/fault-sink.ts
 * sleeps 60 s) happens in the run, yet long enough for a read on a busy 2-core machine.
 */
export const E2E_READ_TIMEOUT_SECONDS = 20;
