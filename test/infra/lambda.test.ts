import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { createVarveFunction, handlerEntry, LAMBDA_WORKERS, prebuiltAsset, PROJECT_ROOT } from '../../infra/lambda.js';
import { cdkJsonContext, logicalId, resourcesOf, testStack } from './template.js';

const WASM_HANDLER = fileURLToPath(new URL('./fixtures/wasm-handler.ts', import.meta.url));

describe('createVarveFunction', () => {
  it('applies the house settings', () => {
    // Prepare
    const stack = testStack();
    // Act
    const fn = createVarveFunction(stack, 'Fn', {
      entry: WASM_HANDLER,
      timeout: Duration.seconds(42),
      environment: { VARVE_TABLE: 'shop.orders' },
    });
    // Assess
    const template = Template.fromStack(stack);
    const props = resourcesOf(template, 'AWS::Lambda::Function')[logicalId(fn)].Properties;
    expect(props).toMatchObject({
      Runtime: 'nodejs22.x',
      Architectures: ['arm64'],
      Handler: 'index.handler',
      Timeout: 42,
      MemorySize: 1024,
      TracingConfig: { Mode: 'Active' },
      Environment: { Variables: { AWS_NODEJS_CONNECTION_REUSE_ENABLED: '1', VARVE_TABLE: 'shop.orders' } },
    });
    const logGroup = resourcesOf(template, 'AWS::Logs::LogGroup')[props.LoggingConfig.LogGroup.Ref];
    expect(logGroup.Properties.RetentionInDays).toBe(30);
    // no Custom::LogRetention Lambda: retention is a property of the log group
    template.resourceCountIs('Custom::LogRetention', 0);
  });

  it("assembles a prebuilt handler's asset from the package's one .wasm and one set of workers", () => {
    // Prepare: the installed package's layout (scripts/build.ts): dist/lambda/<name>/index.js, dist/lambda/shared/, dist/parquet_wasm_bg.wasm
    const dist = mkdtempSync(path.join(tmpdir(), 'varve-dist-'));
    try {
      mkdirSync(path.join(dist, 'lambda', 'commit'), { recursive: true });
      mkdirSync(path.join(dist, 'lambda', 'shared'), { recursive: true });
      writeFileSync(path.join(dist, 'lambda', 'commit', 'index.js'), 'handler');
      for (const w of LAMBDA_WORKERS) writeFileSync(path.join(dist, 'lambda', 'shared', w.file), w.file);
      writeFileSync(path.join(dist, 'parquet_wasm_bg.wasm'), 'wasm');
      // Act
      const asset = prebuiltAsset(path.join(dist, 'lambda', 'commit'));
      // Assert: handler, workers and .wasm side by side, as the bundle looks for them
      expect(readdirSync(asset).sort()).toEqual([
        'decode-worker.js',
        'encode-worker.js',
        'index.js',
        'merge-worker.js',
        'parquet_wasm_bg.wasm',
      ]);
      expect(readFileSync(path.join(asset, 'parquet_wasm_bg.wasm'), 'utf8')).toBe('wasm');
      expect(readFileSync(path.join(asset, 'index.js'), 'utf8')).toBe('handler');
      rmSync(asset, { recursive: true, force: true });
    } finally {
      rmSync(dist, { recursive: true, force: true });
    }
  });

  it('names the entries of the built-in handlers in functions/', () => {
    expect(handlerEntry('discover')).toBe(path.join(PROJECT_ROOT, 'functions', 'discover.ts'));
  });

  it('bundles offline with the local esbuild into minified CJS with the parquet-wasm .wasm beside it', () => {
    // Prepare: a real synth, bundling on
    const outdir = mkdtempSync(path.join(tmpdir(), 'varve-cdk-'));
    try {
      const app = new App({ outdir, context: cdkJsonContext() });
      const stack = new Stack(app, 'Bundle');
      createVarveFunction(stack, 'Fn', { entry: WASM_HANDLER, timeout: Duration.seconds(10) });
      // Act
      app.synth();
      // Assess
      const assets = readdirSync(outdir).filter(
        (d) => d.startsWith('asset.') && statSync(path.join(outdir, d)).isDirectory(),
      );
      expect(assets).toHaveLength(1);
      const dir = path.join(outdir, assets[0]);
      expect(readdirSync(dir).sort()).toEqual(['index.js', 'parquet_wasm_bg.wasm']);
      expect(statSync(path.join(dir, 'parquet_wasm_bg.wasm')).size).toBe(
        statSync(path.join(PROJECT_ROOT, 'node_modules/parquet-wasm/node/parquet_wasm_bg.wasm')).size,
      );
      // the bundle is CommonJS, loads the wasm from its own folder, and its handler runs
      const out = execFileSync(
        process.execPath,
        [
          '-e',
          `require(${JSON.stringify(path.join(dir, 'index.js'))}).handler().then((r) => console.log(JSON.stringify(r)))`,
        ],
        { cwd: tmpdir(), encoding: 'utf8' },
      );
      expect(JSON.parse(out)).toEqual({ loaded: true });
      // CommonJS, minified (a few long lines), no node_modules shipped
      const js = readFileSync(path.join(dir, 'index.js'), 'utf8');
      expect(js).toMatch(/module\.exports/);
      expect(js.split('\n').length).toBeLessThan(50);
      expect(existsSync(path.join(dir, 'node_modules'))).toBe(false);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });
});
