/**
 * An append table (no primary key) through the AWS path on moto: the ingest function writes
 * records as they come (duplicates kept), the commits enqueue compaction jobs, and the compaction
 * function merges the bucket's small files into one, in order.
 */
import type { SQSBatchResponse } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCompactHandler } from '../../functions/compact.js';
import { createIngestHandler } from '../../functions/ingest.js';
import { openCatalog } from '../../lib/catalog/open-catalog.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { awsAvailable } from '../helpers/aws.js';
import { captureMetrics, deploy, drain, powertoolsEnv, reopen, sqsEventOf, captureLogs } from './harness.js';

/** The functions' log lines: an ERROR line fails the test that logged it (harness.ts). */
captureLogs();

// The handlers' EMF metric lines stay off the test output.
captureMetrics();

describe.skipIf(!awsAvailable())('an append table on the AWS path (moto)', () => {
  beforeAll(() => powertoolsEnv());

  it('ingests duplicates as written and the compaction function merges small files in order', async () => {
    // Prepare: an append table whose bucket is due for compaction after 3 small files
    const d = await deploy();
    await openCatalog(d.warehouse, { VARVE_CATALOG_TABLE: d.catalogTable }).createTable('shop.orders', {
      fields: parseSchemaText('id BIGINT, status STRING, amount DOUBLE'),
      options: { 'compaction.max.file-num': '3', 'write-only': 'true' },
    });
    const ingest = createIngestHandler(d.env('direct'));

    // Act: three commits, each with the same record twice
    for (let c = 0; c < 3; c++) {
      const records = [
        { id: 1, status: `v${c}`, amount: c },
        { id: 1, status: `v${c}`, amount: c },
      ];
      const event = sqsEventOf(d.ingestUrl, [
        { MessageId: `m-${c}`, ReceiptHandle: `r-${c}`, Body: JSON.stringify(records), Attributes: {} },
      ]);
      expect(((await ingest(event)) as SQSBatchResponse).batchItemFailures).toEqual([]);
    }
    const polls = await drain(d.compactUrl, createCompactHandler(d.env('direct')), 10);

    // Assess
    expect(polls.flatMap((p) => p.response.batchItemFailures)).toEqual([]);
    const table = await reopen(d);
    const latest = (await table.snapshots.latest())!;
    expect(latest.commitKind).toBe('COMPACT');
    expect((await table.read()).toArray().map((r) => String(r.status))).toEqual(['v0', 'v0', 'v1', 'v1', 'v2', 'v2']);
    let files = 0;
    await table.read({ explain: (e) => void (files = e.liveFiles) });
    expect(files).toBe(1);
  });
});
