/**
 * One place where every AWS SDK client varve makes by default passes through, so that a host can
 * add middleware to all of them without lib/ knowing what it is: the Lambda functions wrap them
 * with the Powertools Tracer (X-Ray subsegments per S3, SQS, DynamoDB and EventBridge call), the
 * request-count benchmark counts their requests. With no decorator a client is returned as is.
 */

/** What a decorator receives: any AWS SDK v3 client (they all carry a middleware stack). */
export interface DecoratableClient {
  middlewareStack: { add: (...args: never[]) => unknown };
}

/** Takes a new client and returns it (or a wrapped one), e.g. with middleware added. */
export type AwsClientDecorator = <C extends DecoratableClient>(client: C) => C;

const decorators: AwsClientDecorator[] = [];

/** Adds a decorator for clients made from now on; returns a function that removes it. */
export function addAwsClientDecorator(decorator: AwsClientDecorator): () => void {
  decorators.push(decorator);
  return () => {
    const i = decorators.indexOf(decorator);
    if (i >= 0) decorators.splice(i, 1);
  };
}

/** Passes a newly made client through every decorator, in the order they were added. */
export function decorateAwsClient<C extends DecoratableClient>(client: C): C {
  let out = client;
  for (const d of decorators) out = d(out);
  return out;
}
