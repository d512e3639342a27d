/**
 * One emulated Lambda container: a child process that loads a synthesised asset bundle (the
 * minified CJS `index.js` esbuild wrote into cdk.out, never the TypeScript sources), reports its
 * cold start (module load, which includes parquet-wasm's WebAssembly compile), then runs
 * invocations one at a time like the Lambda Node.js runtime: `handler(event, context)` with a
 * context whose remaining time counts down from the function's timeout. Every AWS SDK call the
 * bundle makes goes to the parent through the IAM audit middleware.
 *
 * Started by e2e/emulator/lambda.ts with the function's template environment,
 * VARVE_E2E_FUNCTION (its logical id), VARVE_E2E_BUNDLE (the bundle file) and
 * VARVE_E2E_HANDLER (the exported name).
 */
import { readFileSync } from 'node:fs';
import Module from 'node:module';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { installAuditMiddleware, onCall } from '../iam/recorder.js';
import { installS3Faults, setS3Faults, type S3FaultMode } from './s3-faults.js';

type Handler = (event: unknown, context: unknown) => Promise<unknown>;

interface InvokeMessage {
  type: 'invoke';
  id: string;
  event: unknown;
  deadline: number;
  /** S3 faults to inject during this invocation (the emulator's fault round). */
  s3Faults?: S3FaultMode;
  /** An error the invocation fails with instead of running the handler (a scenario's chosen failure). */
  fail?: { name: string; message: string };
}

function send(message: unknown): void {
  process.send?.(message);
}

const bundle = process.env.VARVE_E2E_BUNDLE!;
const exportName = process.env.VARVE_E2E_HANDLER ?? 'handler';
// The bundle's require('@aws-sdk/…') resolves from the project's node_modules (cdk.out lies
// inside the project), the same SDK copy the audit middleware hooks.
installAuditMiddleware(bundle);
onCall((call) => send({ type: 'call', call }));
installS3Faults(bundle, (code, command) => send({ type: 'fault', code, command }));

/**
 * Loads the bundle as CommonJS, as Lambda's runtime does with an `index.js` in /var/task (no
 * package.json there); here the project's package.json says "type": "module", which would make
 * Node treat the bundle as ES module.
 */
function loadCommonJs(file: string): Record<string, Handler> {
  const M = Module as unknown as { new (id: string, parent: null): CjsModule; _nodeModulePaths(dir: string): string[] };
  const m = new M(file, null);
  m.filename = file;
  m.paths = M._nodeModulePaths(path.dirname(file));
  m._compile(readFileSync(file, 'utf8'), file);
  return m.exports as Record<string, Handler>;
}

interface CjsModule {
  filename: string;
  paths: string[];
  exports: unknown;
  _compile(code: string, file: string): void;
}

const started = performance.now();
const mod = loadCommonJs(bundle);
const coldStartMs = performance.now() - started;
const handler = mod[exportName];
if (typeof handler !== 'function') {
  send({ type: 'init-error', error: `the bundle ${bundle} exports no function '${exportName}'` });
  process.exit(1);
}
send({ type: 'ready', coldStartMs, rssMb: process.memoryUsage().rss / 1048576 });

/** An X-Ray trace header as Lambda sets it per invocation (not sampled: nothing is sent to a daemon). */
function traceHeader(): string {
  const hex = (n: number) => randomUUID().replace(/-/g, '').slice(0, n);
  return `Root=1-${Math.floor(Date.now() / 1000).toString(16)}-${hex(24)};Parent=${hex(16)};Sampled=0`;
}

process.on('message', (m: InvokeMessage) => {
  if (m.type !== 'invoke') return;
  process.env._X_AMZN_TRACE_ID = traceHeader();
  const context = {
    functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
    functionVersion: '$LATEST',
    invokedFunctionArn: process.env.VARVE_E2E_FUNCTION_ARN,
    memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${process.env.AWS_LAMBDA_FUNCTION_NAME}`,
    logStreamName: 'e2e',
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, m.deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
  setS3Faults(m.s3Faults);
  const cpu = process.cpuUsage();
  const cpuMs = () => {
    const d = process.cpuUsage(cpu);
    return (d.user + d.system) / 1000;
  };
  Promise.resolve()
    .then(() => {
      if (m.fail) throw Object.assign(new Error(m.fail.message), { name: m.fail.name });
      return handler(m.event, context);
    })
    .then(
      (value) => send({ type: 'result', id: m.id, ok: true, value: value ?? null, cpuMs: cpuMs() }),
      (e: Error) =>
        send({
          type: 'result',
          id: m.id,
          ok: false,
          error: { name: e?.name, message: e?.message ?? String(e) },
          cpuMs: cpuMs(),
        }),
    );
});
