/**
 * S3's fault answers, injected inside an emulated Lambda container: an SDK middleware below the
 * deserializer (per attempt, so the SDK's retry strategy sees each answer as it would on AWS)
 * that answers some requests itself instead of sending them to moto:
 *
 * - **409 ConditionalRequestConflict** on a conditional PUT (If-None-Match / If-Match), a
 *   conditional DeleteObject (If-Match) and a conditional CompleteMultipartUpload, at
 *   `conflictRate`: S3's answer when a concurrent request on the same key wins
 *   (https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html); the request
 *   was not applied.
 * - **503 SlowDown** on any S3 request, at `slowDownRate`: S3's answer when a prefix's request rate
 *   is exceeded (https://docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance.html);
 *   the request was not applied.
 *
 * The first eligible request of each kind in a container after the mode is set (a new seed) always
 * gets its fault, so that a round proves both; the rest are drawn. The mode comes with each
 * invocation (the emulator's fault round turns it on and off); every injected answer is reported
 * to the parent, which counts them per function.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { Readable } from 'node:stream';

/** The S3 faults of an invocation (rates in [0, 1]). */
export interface S3FaultMode {
  conflictRate: number;
  slowDownRate: number;
  /** Seed of this container's draws (the run's seed and the container's number). */
  seed: number;
}

/** An injected answer, for the parent's counts. */
export type S3Injected = 'ConditionalRequestConflict' | 'SlowDown';

const INSTALLED = Symbol.for('varve.e2e.s3Faults');
let mode: S3FaultMode | undefined;
let draw: (() => number) | undefined;
let drawSeed: number | undefined;
/** The first conflict and slow-down of a seed are not drawn. */
let firsts = { conflict: false, slowDown: false };
let report: (code: S3Injected, command: string) => void = () => undefined;

/** Sets the mode of the next requests (undefined: no faults). */
export function setS3Faults(next: S3FaultMode | undefined): void {
  mode = next;
  if (next && next.seed !== drawSeed) {
    draw = seededDraws(String(next.seed));
    drawSeed = next.seed;
    firsts = { conflict: true, slowDown: true };
  }
}

/** Draws in [0, 1) that the same `seed` repeats: SHA-256 of the seed and the draw's number (e2e/ may not import bench's PRNG). */
export function seededDraws(seed: string): () => number {
  let n = 0;
  return () => createHash('sha256').update(`${seed}:${n++}`).digest().readUInt32BE(0) / 2 ** 32;
}

interface SmithyClient {
  middlewareStack: { add(mw: unknown, opts: Record<string, unknown>): void };
  send(...args: unknown[]): unknown;
}

/** Hooks every SDK client of this process (the bundle's, resolved from `requireFrom`); idempotent. */
export function installS3Faults(requireFrom: string, onInjected: (code: S3Injected, command: string) => void): void {
  report = onInjected;
  const req = createRequire(requireFrom);
  const proto = (req('@smithy/core/client') as { Client: { prototype: SmithyClient & { [INSTALLED]?: true } } }).Client
    .prototype;
  if (proto[INSTALLED]) return;
  proto[INSTALLED] = true;
  const hooked = new WeakSet<object>();
  const send = proto.send;
  proto.send = function (this: SmithyClient, ...args: unknown[]) {
    if (!hooked.has(this)) {
      hooked.add(this);
      this.middlewareStack.add(faultMiddleware, { step: 'deserialize', priority: 'low', name: 'varveS3Faults' });
    }
    return send.apply(this, args);
  };
}

type Next = (args: { input: Record<string, unknown> }) => Promise<unknown>;

const CONDITIONAL = new Set(['PutObjectCommand', 'DeleteObjectCommand', 'CompleteMultipartUploadCommand']);

function faultMiddleware(next: Next, context: { clientName?: string; commandName?: string }) {
  return async (args: { input: Record<string, unknown> }) => {
    if (!mode || !draw || context.clientName !== 'S3Client') return next(args);
    const command = context.commandName ?? '';
    const conditional =
      CONDITIONAL.has(command) && (args.input.IfMatch !== undefined || args.input.IfNoneMatch !== undefined);
    if (conditional && (firsts.conflict || draw() < mode.conflictRate)) {
      firsts.conflict = false;
      return answer(409, 'ConditionalRequestConflict', command, 'A conflicting operation occurred.');
    }
    if (firsts.slowDown || draw() < mode.slowDownRate) {
      firsts.slowDown = false;
      return answer(503, 'SlowDown', command, 'Please reduce your request rate.');
    }
    return next(args);
  };
}

/** An S3 error answer as the SDK's HTTP handler returns one (HttpResponse is duck-typed). */
function answer(status: number, code: S3Injected, command: string, message: string) {
  report(code, command.replace(/Command$/, ''));
  const xml = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message><RequestId>varve-e2e-fault</RequestId></Error>`;
  return {
    response: {
      statusCode: status,
      headers: { 'content-type': 'application/xml' },
      body: Readable.from([Buffer.from(xml)]),
    },
  };
}
