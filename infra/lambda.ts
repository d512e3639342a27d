/**
 * The one factory for varve's Lambda functions: every function is a NodejsFunction with the same
 * house settings (Node.js 22 on arm64, a minified CJS bundle built by the local esbuild, the AWS
 * SDK left to the runtime, parquet-wasm's .wasm copied next to the bundle, active tracing, a log
 * group kept one month). See reference/typescript-stack.md §4 for why each choice holds.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Duration, RemovalPolicy, type Size } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import {
  Architecture,
  Code,
  Function as LambdaFunction,
  Runtime,
  Tracing,
  type FunctionProps,
} from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

/**
 * The repository root (esbuild's project root, whose node_modules holds parquet-wasm) — or, in an
 * installed package, its dist/ folder, which holds the prebuilt bundles (dist/lambda/<name>/).
 */
export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The varve handlers that live in functions/, one per Lambda role. */
export type VarveHandlerName = 'ingest' | 'commit' | 'compact' | 'expire' | 'discover' | 'read';

/**
 * Where a built-in handler comes from: its TypeScript entry `functions/<name>.ts` in the
 * repository (bundled at synth), or, in the installed package, which ships no sources, the
 * prebuilt bundle folder `dist/lambda/<name>/` that `npm run build` made with the same settings.
 */
export function handlerEntry(name: VarveHandlerName): string {
  const source = path.join(PROJECT_ROOT, 'functions', `${name}.ts`);
  if (existsSync(source)) return source;
  const prebuilt = path.join(PROJECT_ROOT, 'lambda', name);
  if (existsSync(path.join(prebuilt, 'index.js'))) return prebuilt;
  throw new Error(
    `varve: neither ${source} nor a prebuilt bundle in ${prebuilt} exists; reinstall the varve package (or run npm run build in a clone)`,
  );
}

/** The Node build of parquet-wasm loads this file from `__dirname`, i.e. the bundle's folder. */
export const PARQUET_WASM = 'node_modules/parquet-wasm/node/parquet_wasm_bg.wasm';

/** The pools' workers a bundle finds beside itself (encoder, decode and merge pools), by entry. */
export const LAMBDA_WORKERS = [
  { entry: 'lib/format/encode-worker.ts', file: 'encode-worker.js' },
  { entry: 'lib/format/decode-worker.ts', file: 'decode-worker.js' },
  { entry: 'lib/table/merge-worker.ts', file: 'merge-worker.js' },
] as const;

/**
 * The asset folder of a prebuilt handler: the package ships `lambda/<name>/index.js`, the workers
 * once in `lambda/shared/` and the .wasm once beside the CLI (scripts/build.ts), so the folder a
 * function deploys (handler, workers, .wasm side by side) is assembled here, in a temporary folder
 * named after the installed bundle's path, rewritten on every synth (CDK then copies it into the
 * cloud assembly, named by its content hash). A folder that
 * already holds the .wasm (an older build) is used as it is.
 */
export function prebuiltAsset(dir: string): string {
  if (existsSync(path.join(dir, 'parquet_wasm_bg.wasm'))) return dir;
  const dist = path.dirname(path.dirname(dir));
  const out = path.join(
    os.tmpdir(),
    `varve-lambda-${createHash('sha256').update(path.resolve(dir)).digest('hex').slice(0, 16)}`,
  );
  mkdirSync(out, { recursive: true });
  copyFileSync(path.join(dir, 'index.js'), path.join(out, 'index.js'));
  for (const w of LAMBDA_WORKERS) copyFileSync(path.join(dist, 'lambda', 'shared', w.file), path.join(out, w.file));
  copyFileSync(path.join(dist, 'parquet_wasm_bg.wasm'), path.join(out, 'parquet_wasm_bg.wasm'));
  return out;
}

/**
 * The esbuild settings of every varve bundle (NodejsFunction at synth and the package's prebuilt
 * bundles, scripts/build.ts): one declaration for both.
 */
export const BUNDLE_SETTINGS = {
  // CJS keeps `__dirname`, which parquet-wasm's Node build needs to find its .wasm.
  format: 'cjs',
  target: 'node22',
  minify: true,
  // Class and function names survive minification: an error's name in a log line (and every
  // `e.name` an operator greps for) reads SinkTimeoutError, not `La`.
  keepNames: true,
  sourcemap: false,
  // The Lambda Node.js runtime ships the v3 SDK.
  external: ['@aws-sdk/*'],
  // The encoder pool reads import.meta.url only where __dirname is missing (ESM), never in a CJS
  // bundle, so esbuild's warning that it is empty there says nothing.
  logOverride: { 'empty-import-meta': 'silent' },
} as const;

/** What differs between varve functions; everything else is a house setting. */
export interface VarveFunctionProps {
  /** Absolute path of the TypeScript entry file, or of a prebuilt bundle folder (index.js + parquet_wasm_bg.wasm). */
  readonly entry: string;
  /** Exported handler name. @default 'handler' */
  readonly handler?: string;
  /** Invocation timeout; queue visibility timeouts are derived from it (≥ 6×). */
  readonly timeout: Duration;
  /** @default 1024 */
  readonly memorySize?: number;
  /** /tmp size. @default 512 MiB (the Lambda default) */
  readonly ephemeralStorageSize?: Size;
  /** Extra environment variables, merged over the house ones. */
  readonly environment?: Record<string, string>;
  /** Reserved concurrency; 1 makes the function a singleton. @default none */
  readonly reservedConcurrentExecutions?: number;
  /** Shown in the console. */
  readonly description?: string;
  /** @default one month */
  readonly logRetention?: RetentionDays;
  /** What happens to the log group when the stack is deleted (follow the warehouse's). @default RemovalPolicy.RETAIN */
  readonly logRemovalPolicy?: RemovalPolicy;
  /** Customer-managed KMS key of the log group (its policy must let CloudWatch Logs use it). @default CloudWatch Logs' own encryption */
  readonly logEncryptionKey?: IKey;
}

/**
 * Creates a NodejsFunction with varve's house settings.
 *
 * @example
 * const fn = createVarveFunction(this, 'Ingest', {
 *   entry: handlerEntry('ingest'),
 *   timeout: Duration.seconds(60),
 *   environment: { VARVE_TABLE: 'shop.orders' },
 * });
 */
export function createVarveFunction(scope: Construct, id: string, props: VarveFunctionProps): LambdaFunction {
  // An explicit log group (not the deprecated logRetention custom resource) so retention is a
  // plain CloudFormation property.
  const logGroup = new LogGroup(scope, `${id}Logs`, {
    retention: props.logRetention ?? RetentionDays.ONE_MONTH,
    removalPolicy: props.logRemovalPolicy ?? RemovalPolicy.RETAIN,
    encryptionKey: props.logEncryptionKey,
  });
  // An execution role of our own instead of AWSLambdaBasicExecutionRole: the function may create
  // streams in and write to its own log group only (the managed policy allows every log group in
  // the account, and CreateLogGroup, which an existing group makes needless).
  const role = new Role(scope, `${id}Role`, {
    assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
    description: props.description,
  });
  logGroup.grantWrite(role);
  const common = {
    role,
    description: props.description,
    runtime: Runtime.NODEJS_22_X,
    architecture: Architecture.ARM_64,
    timeout: props.timeout,
    memorySize: props.memorySize ?? 1024,
    ephemeralStorageSize: props.ephemeralStorageSize,
    reservedConcurrentExecutions: props.reservedConcurrentExecutions,
    tracing: Tracing.ACTIVE,
    logGroup,
    environment: {
      AWS_NODEJS_CONNECTION_REUSE_ENABLED: '1',
      ...props.environment,
    },
  } satisfies Partial<FunctionProps>;
  if (!props.entry.endsWith('.ts') && !props.entry.endsWith('.js') && existsSync(path.join(props.entry, 'index.js'))) {
    // A prebuilt bundle (the installed package): the same esbuild output, made at package build.
    return new LambdaFunction(scope, id, {
      ...common,
      code: Code.fromAsset(prebuiltAsset(props.entry)),
      handler: `index.${props.handler ?? 'handler'}`,
    });
  }
  // Inside this repository the lock file pins the bundle's dependencies; a user's own sink entry
  // outside it is bundled from the user's project (CDK finds its lock file).
  const inRepo = props.entry.startsWith(PROJECT_ROOT) && existsSync(path.join(PROJECT_ROOT, 'package-lock.json'));
  return new NodejsFunction(scope, id, {
    ...common,
    entry: props.entry,
    handler: props.handler ?? 'handler',
    ...(inRepo ? { projectRoot: PROJECT_ROOT, depsLockFilePath: path.join(PROJECT_ROOT, 'package-lock.json') } : {}),
    bundling: {
      // The esbuild devDependency bundles on the host; Docker is never needed (nor present).
      forceDockerBundling: false,
      format: OutputFormat.CJS,
      target: BUNDLE_SETTINGS.target,
      minify: BUNDLE_SETTINGS.minify,
      keepNames: BUNDLE_SETTINGS.keepNames,
      sourceMap: BUNDLE_SETTINGS.sourcemap,
      externalModules: [...BUNDLE_SETTINGS.external],
      esbuildArgs: { '--log-override:empty-import-meta': BUNDLE_SETTINGS.logOverride['empty-import-meta'] },
      commandHooks: {
        beforeBundling: () => [],
        beforeInstall: () => [],
        afterBundling: (inputDir: string, outputDir: string) => [
          `cp "${inputDir}/${PARQUET_WASM}" "${outputDir}/parquet_wasm_bg.wasm"`,
        ],
      },
    },
  });
}
