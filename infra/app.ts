/**
 * The CDK app of cdk.json (`npx tsx infra/app.ts`): the example stack, checked by cdk-nag's
 * AWS Solutions rules (every acknowledged finding carries its reason, in infra/nag.ts and in the
 * stack). Environment-agnostic: no account, no region, no lookups.
 */
import { App } from 'aws-cdk-lib';
import { VarveExampleStack } from './example-stack.js';
import { addVarveNagChecks } from './nag.js';

const app = new App();
new VarveExampleStack(app, 'VarveExample', {
  description: 'varve example: warehouse, table shop.orders with ingestion, stream consumer orders-audit',
});
// A finding without an acknowledgment (and its reason) fails synth.
addVarveNagChecks(app, { verbose: true });
app.synth();
