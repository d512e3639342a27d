/**
 * `varve/aws`: the Lambda side of varve for users who build their own functions. The handler
 * factories take the environment contract of docs/AWS.md (the varve CDK constructs set it);
 * `createStreamHandler` turns a function of changes into an SQS FIFO split reader with the
 * partial-batch rules that keep per-key order.
 */
export { createIngestHandler } from './ingest.js';
export { createCommitHandler } from './commit.js';
export { createCompactHandler } from './compact.js';
export { createDiscoverHandler } from './discover.js';
export { createExpireHandler } from './expire.js';
export { createReadHandler } from './read.js';
export {
  createStreamHandler,
  createSplitHandler,
  type SqsHandler,
  type StreamHandlerEnv,
} from './shared/stream-handler.js';
