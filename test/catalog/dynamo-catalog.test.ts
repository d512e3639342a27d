/**
 * The DynamoDB catalog on moto: a table name claimed by one conditional put however many creators
 * race for it, tables listed from DynamoDB alone, the schema in the table folder (the folder
 * catalog opens the same table), and openCatalog choosing by VARVE_CATALOG_TABLE.
 */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoCatalog } from '../../lib/catalog/dynamo-catalog.js';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { openCatalog } from '../../lib/catalog/open-catalog.js';
import { CorruptMetadataError, TableAlreadyExistsError, TableNotFoundError } from '../../lib/errors.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { S3Store } from '../../lib/store/s3-store.js';
import { awsAvailable, freshBucket } from '../helpers/aws.js';
import { createCatalogTable } from '../functions/harness.js';

/** A fresh S3 warehouse and catalog table. */
async function fresh(): Promise<{ catalog: DynamoCatalog; store: S3Store; tableName: string; warehouse: string }> {
  const bucket = await freshBucket('varve-cat');
  const tableName = `catalog-${randomUUID().slice(0, 8)}`;
  await createCatalogTable(tableName);
  const store = new S3Store({ bucket, prefix: 'wh' });
  return { catalog: new DynamoCatalog(store, { tableName }), store, tableName, warehouse: `s3://${bucket}/wh` };
}

/** A create request whose one column is named `column`, so each creator's schema is recognisable. */
function request(column = 'v') {
  return { fields: parseSchemaText(`k BIGINT, ${column} STRING`), primaryKeys: ['k'], options: { bucket: '2' } };
}

describe.skipIf(!awsAvailable())('DynamoCatalog on moto', () => {
  it('creates, opens, lists and drops tables, listing from DynamoDB alone', async () => {
    // Prepare
    const { catalog, store } = await fresh();

    // Act
    await catalog.createTable('shop.orders', request());
    await catalog.createTable('shop.customers', request());
    await catalog.createTable('ops.audit', request());
    const orders = await catalog.getTable('shop.orders');
    await orders.write([{ k: 1n, v: 'a' }]);

    // Assess
    expect(orders.path).toBe('shop.db/orders');
    expect(orders.schema.fields.map((f) => f.name)).toEqual(['k', 'v']);
    expect(await catalog.listTables()).toEqual(['ops.audit', 'shop.customers', 'shop.orders']);
    expect(await catalog.listTables('shop')).toEqual(['shop.customers', 'shop.orders']);
    expect(await catalog.tableExists('shop.orders')).toBe(true);
    // The folder catalog opens the same table: the schema lives in the table folder.
    expect((await (await new FolderCatalog(store).getTable('shop.orders')).read()).numRows).toBe(1);

    // Act: drop
    await catalog.dropTable('shop.orders');

    // Assess
    expect(await catalog.listTables()).toEqual(['ops.audit', 'shop.customers']);
    await expect(catalog.getTable('shop.orders')).rejects.toBeInstanceOf(TableNotFoundError);
    await expect(catalog.dropTable('shop.orders')).rejects.toBeInstanceOf(TableNotFoundError);
    expect(await store.head('shop.db/orders/schema/schema-0')).toBeUndefined();
  });

  it('lets exactly one of many concurrent creators claim a name; the others are told it exists', async () => {
    // Prepare
    const { catalog, tableName, store } = await fresh();
    const creators = Array.from({ length: 8 }, (_, i) =>
      new DynamoCatalog(store, { tableName, client: new DynamoDBClient({}) }).createTable(
        'shop.race',
        request(`c${i}`),
      ),
    );

    // Act
    const outcomes = await Promise.allSettled(creators);

    // Assess
    const won = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [i] : []));
    expect(won).toHaveLength(1);
    for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).toBeInstanceOf(TableAlreadyExistsError);
    const table = await catalog.getTable('shop.race');
    expect(table.schema.fields.map((f) => f.name)).toEqual(['k', `c${won[0]}`]);
  });

  it("with ignoreIfExists, gives every concurrent creator the winner's table", async () => {
    // Prepare
    const { tableName, store } = await fresh();

    // Act
    const tables = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        new DynamoCatalog(store, { tableName }).createTable('shop.same', request(`c${i}`), { ignoreIfExists: true }),
      ),
    );

    // Assess
    expect(new Set(tables.map((t) => t.schema.fields[1].name)).size).toBe(1);
  });

  it('registers a table the folder already holds instead of replacing its schema', async () => {
    // Prepare: a table created through the folder catalog on the same warehouse
    const { catalog, store } = await fresh();
    await new FolderCatalog(store).createTable('shop.legacy', request('old'));

    // Act
    const attempt = catalog.createTable('shop.legacy', request('new'));

    // Assess
    await expect(attempt).rejects.toBeInstanceOf(TableAlreadyExistsError);
    expect((await catalog.getTable('shop.legacy')).schema.fields[1].name).toBe('old');
    expect(await catalog.listTables()).toEqual(['shop.legacy']);
  });

  it('refuses items it cannot trust: no schema under the location, or a location elsewhere', async () => {
    // Prepare
    const { catalog, tableName } = await fresh();
    const dynamo = new DynamoDBClient({});
    const put = (name: string, location: string) =>
      dynamo.send(
        new PutItemCommand({
          TableName: tableName,
          Item: { name: { S: name }, database: { S: 'shop' }, location: { S: location }, createdAt: { N: '0' } },
        }),
      );
    await put('shop.half', 'shop.db/half');
    await put('shop.elsewhere', 'shop.db/other');

    // Act + Assess
    await expect(catalog.getTable('shop.half')).rejects.toThrow(/creation did not finish.*varve drop shop\.half/);
    await expect(catalog.dropTable('shop.elsewhere')).rejects.toBeInstanceOf(CorruptMetadataError);
    // A half-created table can be dropped and created again.
    await catalog.dropTable('shop.half');
    expect((await catalog.createTable('shop.half', request())).path).toBe('shop.db/half');
  });

  it('is what openCatalog opens when VARVE_CATALOG_TABLE is set, the folder catalog otherwise', async () => {
    // Prepare
    const { warehouse, tableName } = await fresh();

    // Act
    const dynamo = openCatalog(warehouse, { VARVE_CATALOG_TABLE: tableName });
    const folder = openCatalog(warehouse, {});

    // Assess
    expect(dynamo).toBeInstanceOf(DynamoCatalog);
    expect((dynamo as DynamoCatalog).tableName).toBe(tableName);
    expect(folder).toBeInstanceOf(FolderCatalog);
    expect(dynamo.store.uri).toBe(warehouse);
  });
});
