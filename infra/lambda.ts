/**
 * The one factory for varve's Lambda functions: every function is a NodejsFunction with the same
 * house settings (Node.js 22 on arm64, a minified CJS bundle built by the local esbuild, the AWS
 * SDK left to the runtime, parquet-wasm's .wasm copied next to the bundle, active tracing, a log
 * group kept one month). See reference/typescript-stack.md §4 for why each choice holds.
 */
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration, Size } from 'aws-cdk-lib';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

/** The repository root: esbuild's project root, whose node_modules holds parquet-wasm. */
export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The varve handlers that live in functions/, one per Lambda role. */
export type VarveHandlerName = 'ingest' | 'commit' | 'compact' | 'expire' | 'discover' | 'read';

/** Absolute path of a built-in handler's entry file, `functions/<name>.ts`. */
export function handlerEntry(name: VarveHandlerName): string {
  return path.join(PROJECT_ROOT, 'functions', `${name}.ts`);
}

/** The Node build of parquet-wasm loads this file from `__dirname`, i.e. the bundle's folder. */
const PARQUET_WASM = 'node_modules/parquet-wasm/node/parquet_wasm_bg.wasm';

/** What differs between varve functions; everything else is a house setting. */
export interface VarveFunctionProps {
  /** Absolute path of the TypeScript entry file. */
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
export function createVarveFunction(scope: Construct, id: string, props: VarveFunctionProps): NodejsFunction {
  // An explicit log group (not the deprecated logRetention custom resource) so retention is a
  // plain CloudFormation property.
  const logGroup = new LogGroup(scope, `${id}Logs`, {
    retention: props.logRetention ?? RetentionDays.ONE_MONTH,
  });
  return new NodejsFunction(scope, id, {
    entry: props.entry,
    handler: props.handler ?? 'handler',
    description: props.description,
    runtime: Runtime.NODEJS_22_X,
    architecture: Architecture.ARM_64,
    timeout: props.timeout,
    memorySize: props.memorySize ?? 1024,
    ephemeralStorageSize: props.ephemeralStorageSize,
    reservedConcurrentExecutions: props.reservedConcurrentExecutions,
    tracing: Tracing.ACTIVE,
    logGroup,
    projectRoot: PROJECT_ROOT,
    depsLockFilePath: path.join(PROJECT_ROOT, 'package-lock.json'),
    environment: {
      AWS_NODEJS_CONNECTION_REUSE_ENABLED: '1',
      ...props.environment,
    },
    bundling: {
      // The esbuild devDependency bundles on the host; Docker is never needed (nor present).
      forceDockerBundling: false,
      // CJS keeps `__dirname`, which parquet-wasm's Node build needs to find its .wasm.
      format: OutputFormat.CJS,
      target: 'node22',
      minify: true,
      sourceMap: false,
      // The Lambda Node.js runtime ships the v3 SDK.
      externalModules: ['@aws-sdk/*'],
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
