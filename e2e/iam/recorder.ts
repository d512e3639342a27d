/**
 * The audit's SDK middleware: installed once per process, it adds itself to the middleware stack
 * of every AWS SDK v3 client (the shared smithy `Client.send`, so clients made inside a bundle or
 * a library are covered too) and records each call's service, command, input and outcome.
 *
 * Which function made a call: the one `withFunction` runs (in-process handlers), else
 * VARVE_E2E_FUNCTION (one emulated Lambda container per process); calls made outside both (the
 * test's own set-up and checks) are not recorded.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createRequire } from 'node:module';
import type { RecordedCall } from './requests.js';

const current = new AsyncLocalStorage<string>();
const listeners = new Set<(call: RecordedCall) => void>();
const INSTALLED = Symbol.for('varve.e2e.iamAudit');

/** Runs `fn` with every SDK call it makes attributed to the function `logicalId`. */
export function withFunction<T>(logicalId: string, fn: () => T): T {
  return current.run(logicalId, fn);
}

/** Calls `listener` for every recorded call; returns a function that removes it. */
export function onCall(listener: (call: RecordedCall) => void): () => void {
  installAuditMiddleware();
  listeners.add(listener);
  return () => listeners.delete(listener);
}

interface SmithyClient {
  middlewareStack: { add(mw: unknown, opts: Record<string, unknown>): void };
  send(...args: unknown[]): unknown;
}

/** Hooks every SDK client of this process (idempotent). */
export function installAuditMiddleware(requireFrom: string = import.meta.url): void {
  const req = createRequire(requireFrom);
  const mod = req('@smithy/core/client') as { Client: { prototype: SmithyClient & { [INSTALLED]?: true } } };
  const proto = mod.Client.prototype;
  if (proto[INSTALLED]) return;
  proto[INSTALLED] = true;
  const withAudit = new WeakSet<object>();
  const send = proto.send;
  proto.send = function (this: SmithyClient, ...args: unknown[]) {
    if (!withAudit.has(this)) {
      withAudit.add(this);
      this.middlewareStack.add(auditMiddleware, {
        step: 'initialize',
        name: 'varveIamAudit',
        override: true,
        priority: 'high',
      });
    }
    return send.apply(this, args);
  };
}

type Next = (args: { input: Record<string, any> }) => Promise<{ output: { $metadata?: { httpStatusCode?: number } } }>;

function auditMiddleware(next: Next, context: { clientName?: string; commandName?: string }) {
  return async (args: { input: Record<string, any> }) => {
    const fn = current.getStore() ?? process.env.VARVE_E2E_FUNCTION;
    // Calls of the test itself (set-up, checks) are nobody's: only functions are audited.
    if (fn === undefined) return next(args);
    const base = {
      fn,
      service: (context.clientName ?? 'Unknown').replace(/Client$/, ''),
      command: (context.commandName ?? 'Unknown').replace(/Command$/, ''),
      input: snapshotInput(args.input),
    };
    try {
      const r = await next(args);
      emit({ ...base, status: r.output?.$metadata?.httpStatusCode });
      return r;
    } catch (e) {
      const err = e as { name?: string; $metadata?: { httpStatusCode?: number } };
      emit({ ...base, status: err.$metadata?.httpStatusCode, error: err.name });
      throw e;
    }
  };
}

/** The input without bodies (only names, keys and condition headers matter to IAM). */
function snapshotInput(input: Record<string, any>): Record<string, any> {
  const out: Record<string, any> = {};
  for (const [k, v] of Object.entries(input ?? {})) {
    if (k === 'Body' || k === 'MessageBody') continue;
    if (k === 'Entries' && Array.isArray(v)) {
      out[k] = v.map((e: Record<string, unknown>) => ({
        EventBusName: e?.EventBusName,
        ReceiptHandle: e?.ReceiptHandle,
        VisibilityTimeout: e?.VisibilityTimeout,
      }));
    } else out[k] = v;
  }
  return out;
}

function emit(call: RecordedCall): void {
  for (const l of listeners) l(call);
}
