/**
 * VarveTable's Glue registration (prop `glue`): the Glue database and Iceberg table, the Glue names
 * in the environment of the functions that commit, and glue:GetTable/UpdateTable on that table only.
 */
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../lib/errors.js';
import { VarveTable, type VarveTableProps } from '../../infra/table.js';
import { Warehouse } from '../../infra/warehouse.js';
import { allIdentityStatements, envOf, functionStatements, granting, resourceList, resourcesOf, testStack } from './template.js';

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

describe('VarveTable glue', () => {
  it('creates the Glue database and an Iceberg external table whose metadata_location is the table metadata folder', () => {
    const { template } = synthLake();
    template.hasResourceProperties('AWS::Glue::Database', { DatabaseInput: { Name: 'lake' } });
    const tables = Object.values(resourcesOf(template, 'AWS::Glue::Table'));
    expect(tables).toHaveLength(1);
    const { DatabaseName, TableInput } = tables[0].Properties;
    expect(DatabaseName).toBe('lake');
    expect(TableInput).toMatchObject({ Name: 'orders', TableType: 'EXTERNAL_TABLE', Parameters: { table_type: 'ICEBERG' } });
    expect(flat(TableInput.Parameters.metadata_location)).toBe('s3://{WarehouseBucket56A35794}/warehouse/shop.db/orders/metadata/');
    expect(flat(TableInput.StorageDescriptor.Location)).toBe('s3://{WarehouseBucket56A35794}/warehouse/shop.db/orders');
    expect((tables[0] as { DependsOn?: string[] }).DependsOn).toHaveLength(1);
  });

  it('uses an existing database when told, and the table name given', () => {
    const { template } = synth({ glue: { database: 'lake', table: 'shop_orders', databaseExists: true } });
    template.resourceCountIs('AWS::Glue::Database', 0);
    template.hasResourceProperties('AWS::Glue::Table', { DatabaseName: 'lake', TableInput: { Name: 'shop_orders' } });
  });

  it('gives the commit and compact functions the Glue names and GetTable/UpdateTable on the catalog, database and table only', () => {
    const { table, template } = synthLake();
    for (const fn of [table.commitFunction!, table.compactFunction]) {
      expect(envOf(template, fn)).toMatchObject({ VARVE_GLUE_DATABASE: 'lake', VARVE_GLUE_TABLE: 'orders' });
      const stmts = granting(functionStatements(template, fn), 'glue:UpdateTable');
      expect(stmts).toHaveLength(1);
      expect([...stmts[0].Action].sort()).toEqual(['glue:GetTable', 'glue:UpdateTable']);
      const glueArn = 'arn:{AWS::Partition}:glue:{AWS::Region}:{AWS::AccountId}:';
      expect(resourceList(stmts[0]).map(flat)).toEqual([`${glueArn}catalog`, `${glueArn}database/lake`, `${glueArn}table/lake/orders`]);
    }
    for (const fn of [table.ingestFunction, table.expireFunction]) {
      expect(envOf(template, fn)).not.toHaveProperty('VARVE_GLUE_TABLE');
      expect(granting(functionStatements(template, fn), 'glue:UpdateTable')).toEqual([]);
    }
  });

  it('gives the ingest function the Glue names and grants in direct mode (it commits), and nothing Glue without the prop', () => {
    const direct = synth({ glue: { database: 'lake' }, commitMode: 'direct' });
    expect(envOf(direct.template, direct.table.ingestFunction)).toMatchObject({ VARVE_GLUE_DATABASE: 'lake', VARVE_GLUE_TABLE: 'orders' });
    expect(granting(functionStatements(direct.template, direct.table.ingestFunction), 'glue:UpdateTable')).toHaveLength(1);
    const plain = synth();
    plain.template.resourceCountIs('AWS::Glue::Table', 0);
    expect(allIdentityStatements(plain.template).filter((s) => [s.Action].flat().some((a) => String(a).startsWith('glue:')))).toEqual([]);
  });

  it('refuses Glue names Athena cannot query', () => {
    expect(() => synth({ glue: { database: 'Lake-1' } })).toThrow(InvalidArgumentError);
  });
});
