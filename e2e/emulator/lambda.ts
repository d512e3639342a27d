/**
 * The Lambda service, emulated: each function of the template runs its synthesised bundle in
 * containers (child processes, fresh module state each), with the template's environment, memory
 * (the V8 heap limit) and timeout (the container is killed at the deadline, as Lambda does), and
 * its concurrency limit (reserved concurrency). A warm container is reused; a new one is a cold
 * start, whose module load (wasm init included) the container measures.
 *
 * Faults of the Lambda service (the emulator's fault round, {@link ServiceFaults}): invocations
 * refused with TooManyRequestsException (429) as when the function's or the account's concurrency
 * is exhausted (the first invocation of each function in the round, then at `throttleRate`), and
 * S3's 409/503 answers injected inside the containers (s3-faults.ts). A scenario may also make
 * one invocation fail with an error of its choosing (the handler does not run).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';
import type { RecordedCall } from '../iam/requests.js';
import { seededDraws, type S3Injected } from './s3-faults.js';

const RUNTIME_SOURCE = fileURLToPath(new URL('./runtime.ts', import.meta.url));
const builtRuntimes = new Map<string, string>();

/**
 * The container runtime (runtime.ts and the audit middleware) compiled once per assembly into
 * `<assembly>/e2e-runtime.mjs`, so that a container is plain `node` like Lambda's runtime: no
 * TypeScript loader in its start-up. Packages stay external (resolved from the project's
 * node_modules, as the bundles' `@aws-sdk/*` are).
 */
function runtimeFor(bundle: string): string {
  const assembly = path.dirname(path.dirname(bundle));
  let out = builtRuntimes.get(assembly);
  if (!out) {
    out = path.join(assembly, 'e2e-runtime.mjs');
    buildSync({
      entryPoints: [RUNTIME_SOURCE],
      outfile: out,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      packages: 'external',
      logLevel: 'error',
    });
    builtRuntimes.set(assembly, out);
  }
  return out;
}

/** What an invocation returned. */
export type InvokeResult =
  | { ok: true; value: unknown }
  | { ok: false; error: { name?: string; message: string }; kind: 'error' | 'timeout' | 'crash' | 'throttle' };

/** The service faults of a fault round (rates in [0, 1]; `seed` seeds every draw). */
export interface ServiceFaults {
  s3ConflictRate: number;
  s3SlowDownRate: number;
  throttleRate: number;
  seed: number;
}

/** Settings of one emulated function. */
export interface FunctionSpec {
  logicalId: string;
  /** The bundle file (`cdk.out/asset.<hash>/index.js`). */
  bundle: string;
  handler: string;
  memoryMb: number;
  timeoutSeconds: number;
  environment: Record<string, string>;
  reservedConcurrency?: number;
}

/** Per-container facts for the report. */
export interface ContainerStats {
  fn: string;
  coldStartMs: number;
  spawnMs: number;
  invocations: number;
  /** The AWS calls of the container's first invocation (the cold one), once it ended. */
  cold?: InvocationCalls;
  /** AWS calls of its later (warm) invocations, and how many of those there were. */
  warmCalls: number;
}

/** The AWS calls one invocation made, and whether service faults were in force or injected during it. */
export interface InvocationCalls {
  calls: RecordedCall[];
  faulted: boolean;
  ok: boolean;
}

interface Container {
  child: ChildProcess;
  busy: boolean;
  stats: ContainerStats;
  /** The container's number within its function (seeds its S3 fault draws). */
  index: number;
  pending?: { id: string; resolve: (r: InvokeResult) => void; timer: NodeJS.Timeout };
  dead: boolean;
  /** The calls of the invocation running now. */
  current?: InvocationCalls;
}

/** Hooks the emulator gives each function. */
export interface FunctionHooks {
  /** Every AWS SDK call a container made (for the IAM audit). */
  onCall(call: RecordedCall): void;
  /** Every line a container printed (its CloudWatch Logs). */
  onLog(fn: string, line: string): void;
  logFile?: string;
  /** The service faults in force (none outside the fault round). */
  faults?(): ServiceFaults | undefined;
}

/** One function: a pool of containers. */
export class EmulatedFunction {
  private readonly containers: Container[] = [];
  private readonly waiting: (() => void)[] = [];
  readonly stats: ContainerStats[] = [];
  invocations = 0;
  errors = 0;
  /** Invocations stopped at the function's timeout, and runtimes that died mid-invocation. */
  timeouts = 0;
  crashes = 0;
  initErrors = 0;
  /** Invocations that waited for a container at the reserved concurrency. */
  slotWaits = 0;
  /** Invocations the service refused (TooManyRequestsException), and S3 answers injected in the containers. */
  throttled = 0;
  readonly injected = new Map<S3Injected, number>();
  /** Wall-clock time of the invocations (from the event sent to the result, what Lambda bills), and their CPU time. */
  durationMs = 0;
  cpuMs = 0;
  /** AWS SDK calls the containers made (not the mapping's polls). */
  sdkCalls = 0;
  private started = 0;
  private throttleDraw?: { seed: number; draw: () => number; first: boolean };

  constructor(
    readonly spec: FunctionSpec,
    private readonly hooks: FunctionHooks,
  ) {}

  get limit(): number {
    return this.spec.reservedConcurrency ?? Infinity;
  }

  /**
   * Invokes once (synchronously, as an event source mapping does); waits for a free slot. `fail`:
   * the invocation fails with this error instead of running the handler.
   */
  async invoke(event: unknown, fail?: { name: string; message: string }): Promise<InvokeResult> {
    const faults = this.hooks.faults?.();
    if (faults && this.refuse(faults)) {
      this.throttled++;
      return {
        ok: false,
        kind: 'throttle',
        error: {
          name: 'TooManyRequestsException',
          message: 'Rate Exceeded. (Reason: ConcurrentInvocationLimitExceeded)',
        },
      };
    }
    let c: Container;
    try {
      c = await this.acquire();
    } catch (e) {
      // The runtime failed its init: Lambda reports Runtime.InitError for the invocation.
      this.invocations++;
      this.errors++;
      this.initErrors++;
      return { ok: false, kind: 'crash', error: { name: 'Runtime.InitError', message: (e as Error).message } };
    }
    this.invocations++;
    c.stats.invocations++;
    c.current = { calls: [], faulted: faults !== undefined, ok: false };
    const id = randomUUID();
    const timeoutMs = this.spec.timeoutSeconds * 1000;
    const sent = performance.now();
    const result = await new Promise<InvokeResult>((resolve) => {
      const timer = setTimeout(() => {
        // Lambda stops the runtime at the deadline; the next invocation gets a fresh one.
        this.kill(c);
        resolve({
          ok: false,
          kind: 'timeout',
          error: { name: 'Sandbox.Timedout', message: `Task timed out after ${this.spec.timeoutSeconds}.00 seconds` },
        });
      }, timeoutMs);
      c.pending = { id, resolve, timer };
      const s3Faults = faults && {
        conflictRate: faults.s3ConflictRate,
        slowDownRate: faults.s3SlowDownRate,
        seed: faults.seed * 1000 + c.index,
      };
      c.child.send({ type: 'invoke', id, event, deadline: Date.now() + timeoutMs, s3Faults, fail });
    });
    this.durationMs += performance.now() - sent;
    const done = c.current!;
    c.current = undefined;
    done.ok = result.ok;
    if (c.stats.invocations === 1) c.stats.cold = done;
    else c.stats.warmCalls += done.calls.length;
    if (!result.ok) {
      this.errors++;
      if (result.kind === 'timeout') this.timeouts++;
      if (result.kind === 'crash') this.crashes++;
    }
    this.release(c);
    return result;
  }

  /** Whether the service refuses this invocation: the first of the fault round, then at its rate. */
  private refuse(faults: ServiceFaults): boolean {
    if (this.throttleDraw?.seed !== faults.seed)
      this.throttleDraw = {
        seed: faults.seed,
        draw: seededDraws(`${faults.seed}/${this.spec.logicalId}`),
        first: true,
      };
    const t = this.throttleDraw;
    const refused = t.first || t.draw() < faults.throttleRate;
    t.first = false;
    return refused;
  }

  /**
   * Stops the containers that are not running an invocation, as Lambda recycles idle ones: the
   * next invocation starts a new (cold) container on a table with history.
   */
  retireIdle(): number {
    const idle = this.containers.filter((c) => !c.busy && !c.dead);
    for (const c of idle) this.kill(c);
    return idle.length;
  }

  /** Stops every container. */
  async shutdown(): Promise<void> {
    for (const c of [...this.containers]) this.kill(c);
  }

  private async acquire(): Promise<Container> {
    for (;;) {
      const idle = this.containers.find((c) => !c.busy && !c.dead);
      if (idle) {
        idle.busy = true;
        return idle;
      }
      if (this.containers.filter((c) => !c.dead).length < this.limit) {
        const c = await this.start();
        c.busy = true;
        return c;
      }
      this.slotWaits++;
      await new Promise<void>((r) => this.waiting.push(r));
    }
  }

  private release(c: Container): void {
    c.busy = false;
    c.pending = undefined;
    this.waiting.shift()?.();
  }

  private kill(c: Container): void {
    if (c.dead) return;
    c.dead = true;
    c.child.kill('SIGKILL');
    const i = this.containers.indexOf(c);
    if (i >= 0) this.containers.splice(i, 1);
  }

  private start(): Promise<Container> {
    const t0 = performance.now();
    const { spec, hooks } = this;
    const child = fork(runtimeFor(spec.bundle), [], {
      execArgv: [`--max-old-space-size=${spec.memoryMb}`],
      // Lambda starts the runtime in the package's folder (/var/task).
      cwd: path.dirname(spec.bundle),
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        AWS_ENDPOINT_URL: process.env.AWS_ENDPOINT_URL,
        AWS_REGION: 'us-east-1',
        AWS_DEFAULT_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
        AWS_LAMBDA_FUNCTION_NAME: spec.logicalId,
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(spec.memoryMb),
        AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
        // The runtime is nodejs22.x; the emulator's own Node may be older, and the AWS SDK's 8-line
        // Node-version warning from every container would bury the functions' log (as varve's CLI
        // turns it into one note, lib/cli/entry.ts; run.ts says it once for the whole run).
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        LAMBDA_TASK_ROOT: path.dirname(spec.bundle),
        ...spec.environment,
        VARVE_E2E_FUNCTION: spec.logicalId,
        VARVE_E2E_BUNDLE: spec.bundle,
        VARVE_E2E_HANDLER: spec.handler.split('.').slice(1).join('.') || 'handler',
      },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const c: Container = {
      child,
      busy: false,
      dead: false,
      stats: { fn: spec.logicalId, coldStartMs: 0, spawnMs: 0, invocations: 0, warmCalls: 0 },
      index: this.started++,
    };
    const onLine = (buf: Buffer) => {
      for (const line of buf.toString('utf8').split('\n')) {
        if (!line) continue;
        hooks.onLog(spec.logicalId, line);
        if (hooks.logFile) appendFileSync(hooks.logFile, `${spec.logicalId} ${line}\n`);
      }
    };
    child.stdout!.on('data', onLine);
    child.stderr!.on('data', onLine);
    return new Promise<Container>((resolve, reject) => {
      child.on('message', (m: { type: string; [k: string]: any }) => {
        if (m.type === 'call') {
          this.sdkCalls++;
          c.current?.calls.push(m.call as RecordedCall);
          hooks.onCall(m.call as RecordedCall);
        } else if (m.type === 'fault') {
          const code = m.code as S3Injected;
          this.injected.set(code, (this.injected.get(code) ?? 0) + 1);
          if (c.current) c.current.faulted = true;
        } else if (m.type === 'ready') {
          c.stats.coldStartMs = m.coldStartMs as number;
          c.stats.spawnMs = performance.now() - t0;
          this.stats.push(c.stats);
          this.containers.push(c);
          resolve(c);
        } else if (m.type === 'init-error') reject(new Error(m.error as string));
        else if (m.type === 'result' && c.pending?.id === m.id) {
          const pending = c.pending!;
          clearTimeout(pending.timer);
          this.cpuMs += Number(m.cpuMs ?? 0);
          pending.resolve(m.ok ? { ok: true, value: m.value } : { ok: false, kind: 'error', error: m.error });
        }
      });
      child.on('exit', (code, signal) => {
        const wasDead = c.dead;
        c.dead = true;
        const i = this.containers.indexOf(c);
        if (i >= 0) this.containers.splice(i, 1);
        const pending = c.pending;
        if (pending && !wasDead) {
          clearTimeout(pending.timer);
          // The runtime died mid-invocation (a crash, an OOM): Lambda reports Runtime.ExitError.
          pending.resolve({
            ok: false,
            kind: 'crash',
            error: {
              name: 'Runtime.ExitError',
              message: `RequestId: … Error: Runtime exited with error: ${signal ?? `exit status ${code}`}`,
            },
          });
        }
        if (!c.stats.spawnMs)
          reject(new Error(`container of ${spec.logicalId} exited during init (${signal ?? code})`));
      });
    });
  }
}
