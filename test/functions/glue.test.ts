/**
 * The Glue registration of the Iceberg export on moto: the commit and compaction functions point
 * the Glue table's metadata_location at each new export (the replaced one as
 * previous_metadata_location); a Glue failure never fails the commit and the next invocation
 * repairs it; Glue never moves back to an older export.
 */
import {
  CreateDatabaseCommand,
  CreateTableCommand,
  GetTableCommand,
  GlueClient,
  UpdateTableCommand,
} from '@aws-sdk/client-glue';
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { SQSBatchResponse } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCommitHandler } from '../../functions/commit.js';
import { createCompactHandler } from '../../functions/compact.js';
import { createIngestHandler } from '../../functions/ingest.js';
import { syncGlueMetadataLocation } from '../../lib/aws/glue.js';
import { icebergLocation, readCurrentIcebergMetadata } from '../../lib/iceberg/iceberg-metadata.js';
import { awsAvailable } from '../helpers/aws.js';
import {
  captureMetrics,
  createOrders,
  deploy,
  drain,
  powertoolsEnv,
  reopen,
  sqsEventOf,
  uniqueName,
  type Deployment,
  captureLogs,
} from './harness.js';

/** The functions' log lines: an ERROR line fails the test that logged it (harness.ts). */
captureLogs();

// The handlers' EMF metric lines stay off the test output.
captureMetrics();

const glue = new GlueClient({});
const s3 = new S3Client({ forcePathStyle: true });

/** A Glue database and Iceberg table as infra/table.ts creates them; their environment variables. */
async function glueTable(d: Deployment, create = true): Promise<Record<string, string>> {
  const database = uniqueName('db').replace(/-/g, '_');
  const folder = `${d.warehouse}/shop.db/orders/metadata/`;
  await glue.send(new CreateDatabaseCommand({ DatabaseInput: { Name: database } }));
  if (create) await createGlueTable(database, folder);
  return { VARVE_GLUE_DATABASE: database, VARVE_GLUE_TABLE: 'orders' };
}

async function createGlueTable(database: string, metadataLocation: string): Promise<void> {
  await glue.send(
    new CreateTableCommand({
      DatabaseName: database,
      TableInput: {
        Name: 'orders',
        TableType: 'EXTERNAL_TABLE',
        Parameters: { table_type: 'ICEBERG', metadata_location: metadataLocation },
        StorageDescriptor: { Location: metadataLocation.replace(/metadata\/$/, '') },
      },
    }),
  );
}

async function glueParameters(env: Record<string, string>): Promise<Record<string, string>> {
  const { Table } = await glue.send(
    new GetTableCommand({ DatabaseName: env.VARVE_GLUE_DATABASE, Name: env.VARVE_GLUE_TABLE }),
  );
  return Table!.Parameters!;
}

/** Asserts the object behind an s3:// URI exists. */
async function exists(uri: string): Promise<void> {
  const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(uri)!;
  await s3.send(new HeadObjectCommand({ Bucket: m[1], Key: m[2] }));
}

/** `n` direct-mode ingest invocations under `env`, one commit each, updating keys 1..3. */
async function ingestDirect(d: Deployment, env: Record<string, string>, n: number, from = 0): Promise<void> {
  const ingest = createIngestHandler(env);
  for (let c = from; c < from + n; c++) {
    const records = [1, 2, 3].map((id) => ({ id, status: `v${c}`, amount: c }));
    const event = sqsEventOf(d.ingestUrl, [
      { MessageId: `m-${c}`, ReceiptHandle: `r-${c}`, Body: JSON.stringify(records), Attributes: {} },
    ]);
    expect(((await ingest(event)) as SQSBatchResponse).batchItemFailures).toEqual([]);
  }
}

describe.skipIf(!awsAvailable())('the Glue registration of the Iceberg export on moto', () => {
  beforeAll(() => powertoolsEnv());

  it('points metadata_location at the export of each group commit and compaction', async () => {
    // Prepare: an exporting table, its Glue table at the metadata folder (as deployed)
    const d = await deploy();
    await createOrders(d, {
      'metadata.iceberg.storage': 'table-location',
      bucket: '1',
      'num-sorted-run.compaction-trigger': '3',
    });
    const glueEnv = await glueTable(d);
    const folder = `${d.warehouse}/shop.db/orders/metadata/`;

    // Act: one group commit (the first commit exports), then two more and a compaction
    const ingestQ = createIngestHandler(d.env('queue'));
    await ingestQ(
      sqsEventOf(d.ingestUrl, [
        {
          MessageId: 'q-1',
          ReceiptHandle: 'r',
          Body: JSON.stringify({ id: 1, status: 'new', amount: 1 }),
          Attributes: {},
        },
      ]),
    );
    const polls = await drain(d.commitUrl, createCommitHandler(d.env('queue', glueEnv)));
    expect(polls.flatMap((p) => p.response.batchItemFailures)).toEqual([]);
    const afterCommit = await glueParameters(glueEnv);
    await ingestDirect(d, d.env('direct'), 2);
    await drain(d.compactUrl, createCompactHandler(d.env('direct', glueEnv)), 1);

    // Assess
    expect(afterCommit).toMatchObject({
      table_type: 'ICEBERG',
      metadata_location: `${folder}v1.metadata.json`,
      previous_metadata_location: folder,
    });
    const latest = (await (await reopen(d)).snapshots.latest())!;
    expect(latest.commitKind).toBe('COMPACT');
    const afterCompact = await glueParameters(glueEnv);
    // Metadata versions count exports, not snapshot ids (a rollback makes ids repeat): Glue names
    // the current export, and that export's current snapshot is varve's latest (by commit uuid).
    const table = await reopen(d);
    const current = (await readCurrentIcebergMetadata(table.store, icebergLocation(table)!))!;
    expect(current.version).toBeGreaterThan(1);
    expect(afterCompact).toMatchObject({
      table_type: 'ICEBERG',
      metadata_location: `${folder}v${current.version}.metadata.json`,
    });
    expect(afterCompact.previous_metadata_location).toBe(`${folder}v${current.version - 1}.metadata.json`);
    const exported = current.metadata.snapshots?.find(
      (s) => s['snapshot-id'] === current.metadata['current-snapshot-id'],
    );
    expect(exported?.summary?.['varve.commit-uuid']).toBe(latest.properties?.['varve.commit-uuid']);
    await exists(afterCompact.metadata_location);
  });

  it('never fails a commit when Glue fails, and the next invocation points Glue at the export', async () => {
    // Prepare: the Glue database does not exist yet (a missing table alone is created again: below)
    const d = await deploy();
    await createOrders(d, { 'metadata.iceberg.storage': 'table-location' });
    const glueEnv = { VARVE_GLUE_DATABASE: uniqueName('db').replace(/-/g, '_'), VARVE_GLUE_TABLE: 'orders' };
    const folder = `${d.warehouse}/shop.db/orders/metadata/`;

    // Act: a commit that exports v1 while GetTable and CreateTable fail; then the database and
    // table appear, and an APPEND that exports nothing new
    await ingestDirect(d, d.env('direct', glueEnv), 1);
    const committed = (await (await reopen(d)).snapshots.latest())!.id;
    await glue.send(new CreateDatabaseCommand({ DatabaseInput: { Name: glueEnv.VARVE_GLUE_DATABASE } }));
    await createGlueTable(glueEnv.VARVE_GLUE_DATABASE, folder);
    await ingestDirect(d, d.env('direct', glueEnv), 1, 1);

    // Assess: the failed update left the commit in place and was redone by the next invocation
    expect(committed).toBe(1);
    expect(await glueParameters(glueEnv)).toMatchObject({
      metadata_location: `${folder}v1.metadata.json`,
      previous_metadata_location: folder,
    });
  });

  it('creates the Glue table again, at the current export, when it is missing (deleted, or dropped by a stack update)', async () => {
    // Prepare: the database, but no table (an update from an older varve's AWS::Glue::Table deletes it in its cleanup)
    const d = await deploy();
    await createOrders(d, { 'metadata.iceberg.storage': 'table-location' });
    const glueEnv = await glueTable(d, false);

    // Act
    await ingestDirect(d, d.env('direct', glueEnv), 1);

    // Assess: the table infra/table.ts registers, pointing at the export
    const { Table } = await glue.send(
      new GetTableCommand({ DatabaseName: glueEnv.VARVE_GLUE_DATABASE, Name: 'orders' }),
    );
    expect(Table).toMatchObject({
      TableType: 'EXTERNAL_TABLE',
      Description: 'varve table shop.orders (Iceberg export)',
      StorageDescriptor: { Location: `${d.warehouse}/shop.db/orders` },
    });
    expect(Table!.Parameters).toEqual({
      table_type: 'ICEBERG',
      metadata_location: `${d.warehouse}/shop.db/orders/metadata/v1.metadata.json`,
    });
    await exists(Table!.Parameters!.metadata_location);
  });

  it('leaves Glue alone when it already names a newer export', async () => {
    // Prepare: Glue names v9 (a faster concurrent function), the table's export is v1
    const d = await deploy();
    await createOrders(d, { 'metadata.iceberg.storage': 'table-location' });
    const glueEnv = await glueTable(d);
    const folder = `${d.warehouse}/shop.db/orders/metadata/`;
    await ingestDirect(d, d.env('direct'), 1);
    const newer = `${folder}v9.metadata.json`;
    await glue.send(
      new UpdateTableCommand({
        DatabaseName: glueEnv.VARVE_GLUE_DATABASE,
        TableInput: {
          Name: 'orders',
          TableType: 'EXTERNAL_TABLE',
          Parameters: { table_type: 'ICEBERG', metadata_location: newer },
        },
      }),
    );

    // Act
    const moved = await syncGlueMetadataLocation({ ...d.env('direct'), ...glueEnv }, await reopen(d));

    // Assess
    expect(moved).toBeUndefined();
    expect((await glueParameters(glueEnv)).metadata_location).toBe(newer);
  });
});
