#!/usr/bin/env bash
# The package proven from the outside (npm run check:package; a CI check): pack varve, install the
# tarball into a fresh project outside the repository, then as a user would
#   (a) a script that imports `varve` and creates, writes, reads and streams a table,
#   (b) a TypeScript file that type-checks against the published .d.ts (NodeNext resolution),
#   (c) a CDK app that imports `varve/cdk` with its own sink built on `varve/aws`, synthesized offline,
#   (d) `npx varve --version`, `--help` and `demo` from the installed package,
# and prints the CLI start times beside `node -e 0` (the floor).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/varve-package-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$ROOT"
version() { node -p "require('./package-lock.json').packages['node_modules/$1'].version"; }
CDK_LIB=$(version aws-cdk-lib); CONSTRUCTS=$(version constructs); ESBUILD=$(version esbuild)

echo "--- npm pack (prepack builds dist/)"
npm pack --silent --pack-destination "$WORK" >/dev/null
TARBALL=$(ls "$WORK"/varve-*.tgz)
PACKED=$(wc -c < "$TARBALL"); UNPACKED=$(tar -xzOf "$TARBALL" | wc -c); FILES=$(tar -tzf "$TARBALL" | wc -l)
echo "packed $(basename "$TARBALL"): $((PACKED / 1024)) KiB, unpacked $((UNPACKED / 1024)) KiB in $FILES files"
# Sizes, not timings: deterministic for a given tree. parquet-wasm's .wasm (4.95 MB) ships once.
if [ "$(tar -tzf "$TARBALL" | grep -c 'parquet_wasm_bg.wasm$')" -ne 1 ]; then echo "the tarball ships parquet_wasm_bg.wasm more than once:"; tar -tzf "$TARBALL" | grep 'wasm$'; exit 1; fi
if [ "$PACKED" -gt $((6 * 1000 * 1000)) ] || [ "$UNPACKED" -gt $((20 * 1000 * 1000)) ]; then echo "the package is over its budget (tarball <= 6 MB, unpacked <= 20 MB)"; exit 1; fi
if tar -tzf "$TARBALL" | grep -qE '^package/(lib|functions|infra|test|bench)/'; then
  echo "the tarball ships sources or tests:"; tar -tzf "$TARBALL" | grep -E '^package/(lib|functions|infra|test|bench)/' | head; exit 1
fi

APP="$WORK/app"
mkdir -p "$APP"
cd "$APP"
cat > package.json <<'JSON'
{ "name": "varve-user-app", "version": "1.0.0", "private": true, "type": "module" }
JSON
echo "--- npm install the tarball into $APP"
npm install --no-audit --no-fund --prefer-offline --save-exact "$TARBALL" "aws-cdk-lib@$CDK_LIB" "constructs@$CONSTRUCTS" "esbuild@$ESBUILD" >/dev/null

echo "--- (a) the library: create, write, read, stream"
cat > use-library.mjs <<'JS'
import assert from 'node:assert/strict';
import { openCatalog, parseSchemaText, LocalRuntime, callbackSink, readAuditLog, TableNotFoundError } from 'varve';

const catalog = openCatalog('./warehouse');
const orders = await catalog.createTable('shop.orders', {
  fields: parseSchemaText('order_id BIGINT, status STRING, amount DOUBLE'),
  primaryKeys: ['order_id'],
  options: { bucket: '2' },
});
await orders.write([{ order_id: 1n, status: 'new', amount: 5 }, { order_id: 2n, status: 'new', amount: 7 }]);
await orders.write([{ order_id: 1n, status: 'paid', amount: 5 }]);
const rows = (await orders.read()).toArray().map((r) => r.toJSON()).sort((a, b) => Number(a.order_id - b.order_id));
assert.deepEqual(rows.map((r) => [r.order_id, r.status]), [[1n, 'paid'], [2n, 'new']]);
assert.equal((await readAuditLog(orders)).numRows >= 2, true);

const seen = [];
const runtime = new LocalRuntime({ compactionIntervalMs: 0, expiryIntervalMs: 0 });
await runtime.start();
await runtime.addConsumer({ table: orders, consumerId: 'app', sink: callbackSink((changes) => { seen.push(...changes); }), stream: { scanMode: 'latest-full' } });
await runtime.idle();
await orders.write([{ order_id: 3n, status: 'new', amount: 1 }]);
await runtime.idle();
await runtime.stop();
assert.ok(seen.some((c) => c.row.order_id === 3n), 'the stream delivered the new order');
await assert.rejects(catalog.getTable('shop.missing'), TableNotFoundError);
console.log(`library ok: ${rows.length} rows read, ${seen.length} changes streamed`);
JS
node use-library.mjs

echo "--- (b) the types: a TypeScript user file against the published .d.ts"
cat > check-types.ts <<'TS'
import { openCatalog, parseSchemaText, type Table, type CommitResult, VarveError } from 'varve';
import { createStreamHandler, type SqsHandler } from 'varve/aws';
import { Warehouse, VarveTable, StreamConsumer } from 'varve/cdk';
export async function f(): Promise<CommitResult> {
  const t: Table = await openCatalog('./w').getTable('a.b');
  parseSchemaText('a INT');
  return t.write([{ a: 1 }]);
}
export const h: SqsHandler = createStreamHandler(async (changes) => { void changes.length; });
export const names = [Warehouse.name, VarveTable.name, StreamConsumer.name, VarveError.name];
TS
node "$ROOT/node_modules/typescript/bin/tsc" --noEmit --strict --skipLibCheck --module nodenext --moduleResolution nodenext --target es2022 --types node --typeRoots "$ROOT/node_modules/@types" check-types.ts
echo "types ok"

echo "--- (c) a user CDK app with its own sink, synthesized offline"
cat > audit-sink.mjs <<'JS'
import { createStreamHandler } from 'varve/aws';
export const handler = createStreamHandler(async (changes) => {
  for (const c of changes) console.log(JSON.stringify({ kind: c.kind, order: String(c.row.order_id) }));
});
JS
cat > cdk-app.mjs <<'JS'
import path from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Warehouse, VarveTable, StreamConsumer } from 'varve/cdk';

const app = new App({ outdir: 'cdk.out' });
const stack = new Stack(app, 'UserStack');
const warehouse = new Warehouse(stack, 'Warehouse');
const orders = new VarveTable(stack, 'Orders', { warehouse, database: 'shop', table: 'orders' });
new StreamConsumer(stack, 'Audit', {
  table: orders,
  consumerId: 'audit',
  sink: { kind: 'function', entry: path.resolve('audit-sink.mjs') },
});
const assembly = app.synth();
const template = Template.fromStack(stack);
const fns = Object.keys(template.findResources('AWS::Lambda::Function'));
if (fns.length < 5) throw new Error(`expected the varve functions in the template, found ${fns.length}`);
console.log(`cdk ok: ${fns.length} functions, assets in ${path.relative('.', assembly.directory)}`);
JS
node cdk-app.mjs
# Every function asset holds its .wasm beside index.js; the built-in ones the pools' workers too
# (the package ships them once; infra/lambda.ts assembles each asset at synth).
WITH_WORKERS=0
for d in cdk.out/asset.*/; do
  [ -f "$d/index.js" ] || continue
  [ -f "$d/parquet_wasm_bg.wasm" ] || { echo "asset $d has no parquet_wasm_bg.wasm"; ls "$d"; exit 1; }
  if [ -f "$d/encode-worker.js" ] && [ -f "$d/decode-worker.js" ] && [ -f "$d/merge-worker.js" ]; then WITH_WORKERS=$((WITH_WORKERS + 1)); fi
done
# This app deploys 5 built-in handlers (ingest, commit, compact, expire, discover): 5 assets.
[ "$WITH_WORKERS" -ge 5 ] || { echo "expected the 5 built-in function assets of this app with their workers, found $WITH_WORKERS"; exit 1; }
echo "assets ok: $WITH_WORKERS built-in function assets with handler, workers and .wasm"

echo "--- (d) the CLI from the installed package"
npx --no-install varve --version
npx --no-install varve --help >/dev/null
VARVE_WAREHOUSE="$APP/demo-warehouse" npx --no-install varve demo > demo.log 2>&1 || { cat demo.log; exit 1; }
tail -n 3 demo.log

echo "--- CLI start (median of 5 wall times; node -e 0 is the floor)"
printf 'order_id,status\n1,new\n2,paid\n' > small.csv
node node_modules/varve/bin/varve.mjs --warehouse ./bench-wh create shop.small --schema 'order_id BIGINT, status STRING' --primary-key order_id >/dev/null
node - <<'JS'
const { execFileSync } = require('node:child_process');
const cli = 'node_modules/varve/bin/varve.mjs';
const median = (argv) => {
  const t = [];
  for (let i = 0; i < 5; i++) { const s = process.hrtime.bigint(); execFileSync(process.execPath, argv, { stdio: 'ignore' }); t.push(Number(process.hrtime.bigint() - s) / 1e9); }
  return t.sort((a, b) => a - b)[2].toFixed(3);
};
const bin = (args) => {
  const t = [];
  for (let i = 0; i < 5; i++) { const s = process.hrtime.bigint(); execFileSync('node_modules/.bin/varve', args, { stdio: 'ignore' }); t.push(Number(process.hrtime.bigint() - s) / 1e9); }
  return t.sort((a, b) => a - b)[2].toFixed(3);
};
console.log(`cli-start: node -e 0 ${median(['-e', '0'])} s; node_modules/.bin/varve --help ${bin(['--help'])} s; varve --help ${median([cli, '--help'])} s; small varve write ${median([cli, '--warehouse', './bench-wh', 'write', 'shop.small', 'small.csv'])} s`);
JS
echo "package check passed"
