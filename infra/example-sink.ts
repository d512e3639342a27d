/**
 * The example app's own sink for the `orders-audit` consumer of `shop.orders`: every change,
 * with its row kind, becomes one JSON line in CloudWatch Logs (an audit trail to query with Logs
 * Insights). A real sink would write to a database, a search index or an API the same way.
 */
import { createStreamHandler } from '../functions/shared/stream-handler.js';

/** JSON for rows whose BIGINT and BYTES values JSON cannot carry as they are. */
function auditLine(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'bigint' ? v.toString() : v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v,
  );
}

/** Lambda entry of the `orders-audit` reader. */
export const handler = createStreamHandler(async (changes) => {
  for (const change of changes) console.log(auditLine(change));
});
