/**
 * Counting the AWS requests varve makes, with an SDK middleware on every client varve creates
 * (lib/store/client-decorator.ts): the one request counter of the benchmarks (bench/suites/commit.ts,
 * per commit on S3), the request-count test (test/functions/request-counts.test.ts) and the cost
 * model bench (test/functions/aws-requests.stress.ts).
 *
 * What is counted: each HTTP request a client sends, SDK retries included (the middleware sits in
 * the deserialize step, inside the SDK's retry loop), as `Service:Command` — an S3 put with
 * If-None-Match is `S3:PutObject(if-none-match)`, one with If-Match `S3:PutObject(if-match)`.
 * Clients made before `onAwsRequest` is called, and clients passed in by the caller, are not
 * counted (the harness's own clients stay out).
 */
import { addAwsClientDecorator } from '../../lib/store/client-decorator.js';

/** One request as the listener sees it. */
export interface AwsRequest {
  /** `S3`, `SQS`, `DynamoDB`, `EventBridge`, … (the client's class name without `Client`). */
  service: string;
  /** `GetObject`, `PutObject(if-none-match)`, `SendMessageBatch`, … */
  command: string;
  /** The command's input (e.g. `Key` of an S3 request). */
  input: Record<string, unknown>;
}

/** Calls `listener` for every request of every AWS client varve makes from now on; returns the uninstaller. */
export function onAwsRequest(listener: (r: AwsRequest) => void): () => void {
  return addAwsClientDecorator((client) => {
    const service = client.constructor.name.replace(/Client$/, '');
    (client.middlewareStack as unknown as { add: (mw: unknown, opts: unknown) => void }).add(
      (next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) =>
        async (args: { input?: Record<string, unknown> }) => {
          const input = args.input ?? {};
          let command = (context.commandName ?? '?').replace(/Command$/, '');
          if (command === 'PutObject' && input.IfNoneMatch !== undefined) command += '(if-none-match)';
          else if (command === 'PutObject' && input.IfMatch !== undefined) command += '(if-match)';
          listener({ service, command, input });
          return next(args);
        },
      { step: 'deserialize', name: 'varveRequestCount' },
    );
    return client;
  });
}

/** Requests counted by a key, e.g. `S3:GetObject` or `S3:GetObject snapshot`. */
export class AwsRequestCounts {
  counts = new Map<string, number>();

  /** Adds one request under `key`. */
  add(key: string): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  /** Forgets every count. */
  reset(): void {
    this.counts = new Map();
  }

  /** All requests counted. */
  get total(): number {
    let n = 0;
    for (const v of this.counts.values()) n += v;
    return n;
  }
}

/**
 * Counts every request of varve's AWS clients as `Service:Command`, or under the key `keyOf`
 * returns (undefined: not counted). `remove()` uninstalls it.
 */
export function countAwsRequests(
  keyOf: (r: AwsRequest) => string | undefined = (r) => `${r.service}:${r.command}`,
): AwsRequestCounts & { remove: () => void } {
  const counts = new AwsRequestCounts();
  const remove = onAwsRequest((r) => {
    const key = keyOf(r);
    if (key !== undefined) counts.add(key);
  });
  return Object.assign(counts, { remove });
}
