/**
 * The DynamoDB catalog: one item per table (`name` = `database.table` → `location` in the
 * warehouse), so that a table name is claimed atomically by a conditional put and tables are
 * listed from DynamoDB alone. The schema stays where every reader looks for it, in the table's
 * folder (`<location>/schema/schema-<id>`), so a table opened through this catalog is the same
 * table the folder catalog opens.
 */
import {
  DeleteItemCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  ScanCommand,
  type AttributeValue,
} from '@aws-sdk/client-dynamodb';
import { CorruptMetadataError, TableAlreadyExistsError, TableNotFoundError } from '../errors.js';
import { listAll, type ObjectStore } from '../store/object-store.js';
import { parseTableIdentifier } from '../schema/parse.js';
import { createSchemaFile, latestSchema } from '../schema/schema-manager.js';
import { tableLocation } from '../table/paths.js';
import { withIcebergExport } from '../iceberg/export-trigger.js';
import { INLINE_COMPACTION } from '../maintenance/compact-trigger.js';
import { Table } from '../table/table.js';
import { runLimited } from '../concurrency.js';
import { initialSchema, type Catalog, type CreateTableRequest } from './catalog.js';
import { decorateAwsClient } from '../store/client-decorator.js';

/** Options of a DynamoCatalog. */
export interface DynamoCatalogOptions {
  /** The DynamoDB table (partition key `name`, a string), e.g. VARVE_CATALOG_TABLE. */
  tableName: string;
  /** @default a client configured from the environment (AWS_ENDPOINT_URL for moto/LocalStack) */
  client?: DynamoDBClient;
  /** How long `createTable(…, { ignoreIfExists })` waits for a concurrent creator's schema. @default 10_000 */
  concurrentCreateWaitMs?: number;
}

/** One catalog item, as stored. */
interface CatalogItem {
  name: string;
  database: string;
  location: string;
  createdAt: number;
}

/** Catalog whose registry is a DynamoDB table; the tables themselves live in `store`. */
export class DynamoCatalog implements Catalog {
  readonly tableName: string;
  readonly client: DynamoDBClient;
  private readonly waitMs: number;

  constructor(
    readonly store: ObjectStore,
    opts: DynamoCatalogOptions,
  ) {
    this.tableName = opts.tableName;
    this.client = opts.client ?? decorateAwsClient(new DynamoDBClient({}));
    this.waitMs = opts.concurrentCreateWaitMs ?? 10_000;
  }

  async createTable(name: string, req: CreateTableRequest, opts: { ignoreIfExists?: boolean } = {}): Promise<Table> {
    const id = parseTableIdentifier(name);
    const full = `${id.database}.${id.table}`;
    const location = tableLocation(id.database, id.table);
    const schema = initialSchema(req);
    const item: CatalogItem = { name: full, database: id.database, location, createdAt: Date.now() };
    try {
      // THE CLAIM: of concurrent creates of one name exactly one puts the item; the others are
      // told the table exists.
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: toAttributes(item),
          ConditionExpression: 'attribute_not_exists(#n)',
          ExpressionAttributeNames: { '#n': 'name' },
        }),
      );
    } catch (e) {
      if ((e as Error).name !== 'ConditionalCheckFailedException') throw e;
      if (!opts.ignoreIfExists) throw new TableAlreadyExistsError(full);
      return this.awaitSchema(full);
    }
    let created: boolean;
    try {
      created = await createSchemaFile(this.store, location, schema);
    } catch (e) {
      // The name was claimed but the table never came to be: give the name back.
      await this.deleteItem(full);
      throw e;
    }
    // The folder already held a table (made through a folder catalog on the same warehouse): it
    // is that table the name now registers, and the new schema is not applied.
    if (!created) {
      if (opts.ignoreIfExists) return this.getTable(full);
      throw new TableAlreadyExistsError(full);
    }
    return new Table(this.store, full, location, schema, withIcebergExport(INLINE_COMPACTION));
  }

  async getTable(name: string): Promise<Table> {
    const id = parseTableIdentifier(name);
    const full = `${id.database}.${id.table}`;
    const item = await this.getItem(full);
    if (!item) throw new TableNotFoundError(full);
    const schema = await latestSchema(this.store, item.location);
    if (!schema) {
      throw new CorruptMetadataError(
        `table ${full} is registered in the catalog ${this.tableName} but ${this.store.uri}/${item.location} holds no schema: ` +
          `its creation did not finish or its folder was removed; drop it (\`varve drop ${full}\`) and create it again`,
      );
    }
    return new Table(this.store, full, item.location, schema, withIcebergExport(INLINE_COMPACTION));
  }

  async tableExists(name: string): Promise<boolean> {
    const id = parseTableIdentifier(name);
    return (await this.getItem(`${id.database}.${id.table}`)) !== undefined;
  }

  async listTables(database?: string): Promise<string[]> {
    const names: string[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const r = await this.client.send(
        new ScanCommand({
          TableName: this.tableName,
          ProjectionExpression: '#n',
          ExpressionAttributeNames: { '#n': 'name' },
          ...(database
            ? { FilterExpression: 'begins_with(#n, :db)', ExpressionAttributeValues: { ':db': { S: `${database}.` } } }
            : {}),
          ExclusiveStartKey: start,
          ConsistentRead: true,
        }),
      );
      for (const it of r.Items ?? []) if (it.name?.S) names.push(it.name.S);
      start = r.LastEvaluatedKey;
    } while (start);
    return names.sort();
  }

  async dropTable(name: string): Promise<void> {
    const id = parseTableIdentifier(name);
    const full = `${id.database}.${id.table}`;
    const item = await this.getItem(full);
    if (!item) throw new TableNotFoundError(full);
    // Schema files go first: from then on no one opens the table, and what is left below it is
    // unreachable garbage. The item goes next (the name is free again), the files last.
    for (const o of await listAll(this.store, `${item.location}/schema/`)) await this.store.delete(o.key);
    await this.deleteItem(full);
    const rest = await listAll(this.store, `${item.location}/`);
    await runLimited(
      rest.map((o) => () => this.store.delete(o.key)),
      16,
    );
  }

  private async getItem(name: string): Promise<CatalogItem | undefined> {
    const r = await this.client.send(
      new GetItemCommand({ TableName: this.tableName, Key: { name: { S: name } }, ConsistentRead: true }),
    );
    if (!r.Item) return undefined;
    const item = fromAttributes(r.Item);
    // Every file of the table, and every IAM grant on it, lives under the standard location; an
    // item pointing elsewhere is not trusted (dropTable deletes everything under it).
    const [database, table] = name.split('.');
    if (item.location !== tableLocation(database, table)) {
      throw new CorruptMetadataError(
        `catalog item ${name} in ${this.tableName} points at "${item.location}", not at the table's folder "${tableLocation(database, table)}"; fix or delete the item in DynamoDB`,
      );
    }
    return item;
  }

  private async deleteItem(name: string): Promise<void> {
    await this.client.send(new DeleteItemCommand({ TableName: this.tableName, Key: { name: { S: name } } }));
  }

  /** The table a concurrent create is making: its item exists, its schema may lag by a moment. */
  private async awaitSchema(full: string): Promise<Table> {
    const deadline = Date.now() + this.waitMs;
    for (let wait = 25; ; wait = Math.min(wait * 2, 500)) {
      try {
        return await this.getTable(full);
      } catch (e) {
        if (!(e instanceof CorruptMetadataError) || Date.now() >= deadline) throw e;
      }
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}

function toAttributes(item: CatalogItem): Record<string, AttributeValue> {
  return {
    name: { S: item.name },
    database: { S: item.database },
    location: { S: item.location },
    createdAt: { N: String(item.createdAt) },
  };
}

function fromAttributes(a: Record<string, AttributeValue>): CatalogItem {
  const name = a.name?.S;
  const location = a.location?.S;
  if (!name || !location) {
    throw new CorruptMetadataError(
      `a catalog item has no name or location (${JSON.stringify(a).slice(0, 200)}); fix or delete it in DynamoDB`,
    );
  }
  return { name, database: a.database?.S ?? name.split('.')[0], location, createdAt: Number(a.createdAt?.N ?? 0) };
}
