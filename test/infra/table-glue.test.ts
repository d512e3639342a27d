/**
 * VarveTable's Glue registration (prop `glue`): the Glue database and Iceberg table, the Glue names
 * in the environment of the functions that commit, and glue:GetTable/UpdateTable/CreateTable on that table only;
 * the table is a custom resource that a stack update never resets.
 */
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../lib/errors.js';
import { GLUE_TABLE_RESOURCE_TYPE, VarveTable, type VarveTableProps } from '../../infra/table.js';
import { Warehouse } from '../../infra/warehouse.js';
import {
  allIdentityStatements,
  envOf,
  functionStatements,
  granting,
  resourceList,
  resourcesOf,
  testStack,
} from './template.js';

function synth(props: Partial<VarveTableProps> = {}) {
  const stack = testStack();
  const warehouse = new Warehouse(stack, 'Warehouse');
  const table = new VarveTable(stack, 'Orders', { warehouse, database: 'shop', table: 'orders', ...props });
  return { table, template: Template.fromStack(stack) };
}

/** The `glue: { database: 'lake' }` synthesis two tests read, made once (a synth costs seconds on a busy machine). */
let lake: ReturnType<typeof synth> | undefined;
function synthLake() {
  return (lake ??= synth({ glue: { database: 'lake' } }));
}

/** A synthesised ARN (a Fn::Join of partition, region and account refs) as one string. */
function flat(arn: unknown): string {
  const join = (arn as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
  if (!join) return String(arn);
  return join[1].map((p) => (typeof p === 'string' ? p : `{${Object.values(p as object).join('')}}`)).join(join[0]);
}

/** An AwsCustomResource's SDK call (a JSON string, or a Fn::Join of it around refs), refs as {Ref}. */
function sdkCall(property: unknown): any {
  return JSON.parse(flat(property));
}

describe('VarveTable glue', () => {
  it('creates the Glue database and an Iceberg external table whose metadata_location is the table metadata folder', () => {
    const { template } = synthLake();
    template.hasResourceProperties('AWS::Glue::Database', { DatabaseInput: { Name: 'lake' } });
    const tables = Object.values(resourcesOf(template, GLUE_TABLE_RESOURCE_TYPE));
    expect(tables).toHaveLength(1);
    const create = sdkCall(tables[0].Properties.Create);
    expect(create).toMatchObject({ service: 'Glue', action: 'createTable', physicalResourceId: { id: 'lake.orders' } });
    const { DatabaseName, TableInput } = create.parameters;
    expect(DatabaseName).toBe('lake');
    expect(TableInput).toMatchObject({
      Name: 'orders',
      TableType: 'EXTERNAL_TABLE',
      Parameters: { table_type: 'ICEBERG' },
    });
    expect(TableInput.Parameters.metadata_location).toBe(
      's3://{WarehouseBucket56A35794}/warehouse/shop.db/orders/metadata/',
    );
    expect(TableInput.StorageDescriptor.Location).toBe('s3://{WarehouseBucket56A35794}/warehouse/shop.db/orders');
    expect((tables[0] as { DependsOn?: string[] }).DependsOn?.filter((id) => id.includes('GlueDatabase'))).toHaveLength(
      1,
    );
    expect(sdkCall(tables[0].Properties.Delete)).toMatchObject({
      action: 'deleteTable',
      parameters: { DatabaseName: 'lake', Name: 'orders' },
    });
    template.resourceCountIs('AWS::Glue::Table', 0);
  });

  it('keeps the metadata_location the functions set across stack updates: an update only creates the table when it is missing', () => {
    // A CloudFormation update of an AWS::Glue::Table puts its whole TableInput back, and with it
    // the first metadata_location. The custom resource's update is a CreateTable that an existing
    // table refuses (AlreadyExistsException, ignored): the table, and where it points, stay.
    const { template } = synthLake();
    const [glueTable] = Object.values(resourcesOf(template, GLUE_TABLE_RESOURCE_TYPE));
    const update = sdkCall(glueTable.Properties.Update);
    expect(update).toEqual(sdkCall(glueTable.Properties.Create));
    expect(update).toMatchObject({ action: 'createTable', ignoreErrorCodesMatching: 'AlreadyExistsException' });
    // A table deleted meanwhile (or by the cleanup of an update from an older varve's AWS::Glue::Table)
    // is created again by the functions at the next export: they may create it.
    const { table } = synthLake();
    expect(
      [...granting(functionStatements(template, table.commitFunction!), 'glue:CreateTable')[0].Action].sort(),
    ).toEqual(['glue:CreateTable', 'glue:GetTable', 'glue:UpdateTable']);
  });

  it('uses an existing database when told, and the table name given', () => {
    const { template } = synth({ glue: { database: 'lake', table: 'shop_orders', databaseExists: true } });
    template.resourceCountIs('AWS::Glue::Database', 0);
    const [glueTable] = Object.values(resourcesOf(template, GLUE_TABLE_RESOURCE_TYPE));
    expect(sdkCall(glueTable.Properties.Create).parameters).toMatchObject({
      DatabaseName: 'lake',
      TableInput: { Name: 'shop_orders' },
    });
  });

  it('gives the commit and compact functions the Glue names and GetTable/UpdateTable/CreateTable on the catalog, database and table only', () => {
    const { table, template } = synthLake();
    for (const fn of [table.commitFunction!, table.compactFunction]) {
      expect(envOf(template, fn)).toMatchObject({ VARVE_GLUE_DATABASE: 'lake', VARVE_GLUE_TABLE: 'orders' });
      const stmts = granting(functionStatements(template, fn), 'glue:UpdateTable');
      expect(stmts).toHaveLength(1);
      expect([...stmts[0].Action].sort()).toEqual(['glue:CreateTable', 'glue:GetTable', 'glue:UpdateTable']);
      const glueArn = 'arn:{AWS::Partition}:glue:{AWS::Region}:{AWS::AccountId}:';
      expect(resourceList(stmts[0]).map(flat)).toEqual([
        `${glueArn}catalog`,
        `${glueArn}database/lake`,
        `${glueArn}table/lake/orders`,
      ]);
    }
    for (const fn of [table.ingestFunction, table.expireFunction]) {
      expect(envOf(template, fn)).not.toHaveProperty('VARVE_GLUE_TABLE');
      expect(granting(functionStatements(template, fn), 'glue:UpdateTable')).toEqual([]);
    }
  });

  it('gives the ingest function the Glue names and grants in direct mode (it commits), and nothing Glue without the prop', () => {
    const direct = synth({ glue: { database: 'lake' }, commitMode: 'direct' });
    expect(envOf(direct.template, direct.table.ingestFunction)).toMatchObject({
      VARVE_GLUE_DATABASE: 'lake',
      VARVE_GLUE_TABLE: 'orders',
    });
    expect(granting(functionStatements(direct.template, direct.table.ingestFunction), 'glue:UpdateTable')).toHaveLength(
      1,
    );
    const plain = synth();
    plain.template.resourceCountIs(GLUE_TABLE_RESOURCE_TYPE, 0);
    expect(
      allIdentityStatements(plain.template).filter((s) => [s.Action].flat().some((a) => String(a).startsWith('glue:'))),
    ).toEqual([]);
  });

  it('refuses Glue names Athena cannot query', () => {
    expect(() => synth({ glue: { database: 'Lake-1' } })).toThrow(InvalidArgumentError);
  });
});
