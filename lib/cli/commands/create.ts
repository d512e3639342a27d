/** `varve create`: a primary-key table, or without --primary-key an append table. */
import type { CliContext } from '../context.js';
import { collect, list, parseOptionPairs } from '../parse-flags.js';

interface CreateFlags {
  schema: string;
  primaryKey?: string;
  partitionKeys?: string;
  option?: string[];
  comment?: string;
  ifNotExists?: boolean;
}

/** Registers `create`. */
export function registerCreate({ program, catalog, out }: CliContext): void {
  program
    .command('create')
    .description('create a table: a primary-key table, or without --primary-key an append table (rows kept as written)')
    .argument('<table>', 'DB.TABLE')
    .requiredOption(
      '--schema <schema>',
      'columns in SQL form, e.g. "id BIGINT, name STRING", or a JSON array of {name, type}',
    )
    .option(
      '--primary-key <cols>',
      'primary key columns, comma separated (none: an append table, bucket=-1 unless -o bucket=N -o bucket-key=cols)',
    )
    .option('--partition-keys <cols>', 'partition columns, comma separated (part of the primary key, if there is one)')
    .option(
      '-o, --option <key=value>',
      'table option, repeatable (e.g. -o bucket=4 -o merge-engine=aggregation)',
      collect,
    )
    .option('--comment <text>', 'table comment')
    .option('--if-not-exists', 'do nothing when the table exists')
    .action(async (name: string, o: CreateFlags) => {
      const { parseSchemaJson, parseSchemaText } = await import('../../schema/parse.js');
      const text = String(o.schema).trim();
      const fields = text.startsWith('[') || text.startsWith('{') ? parseSchemaJson(text) : parseSchemaText(text);
      const table = await catalog().createTable(
        name,
        {
          fields,
          primaryKeys: o.primaryKey === undefined ? [] : list(o.primaryKey),
          partitionKeys: o.partitionKeys ? list(o.partitionKeys) : [],
          options: parseOptionPairs(o.option),
          comment: o.comment,
        },
        { ignoreIfExists: Boolean(o.ifNotExists) },
      );
      const layout =
        table.options.bucket === -1
          ? 'bucket-unaware'
          : `${table.options.bucket} buckets by ${table.options.bucketKey.join(', ')}`;
      const kind = table.schema.primaryKeys.length === 0 ? ` (append table, ${layout})` : '';
      out(`created ${table.name}${kind} at ${table.store.uri}/${table.path}\n`);
    });
}
