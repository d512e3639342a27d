/** `varve alter`: schema evolution (columns, options, comment). */
import { InvalidArgumentError } from '../../errors.js';
import type { SchemaChange } from '../../schema/schema-evolution.js';
import type { CliContext } from '../context.js';
import { collect, parseOptionPairs } from '../parse-flags.js';

interface AlterFlags {
  add?: string[];
  rename?: string[];
  drop?: string[];
  type?: string[];
  set?: string[];
  reset?: string[];
  comment?: string;
}

/** Registers `alter`. */
export function registerAlter({ program, catalog, out }: CliContext): void {
  program
    .command('alter')
    .description(
      'change the schema: add, rename, drop or widen columns, set or reset options, set the comment (old files are read by field id)',
    )
    .argument('<table>', 'DB.TABLE')
    .option(
      '--add <column>',
      'add a nullable column: "name TYPE [COMMENT \'…\'] [AFTER col | FIRST]", repeatable',
      collect,
    )
    .option('--rename <old=new>', 'rename a column, repeatable', collect)
    .option('--drop <column>', 'drop a column (not a key or partition column), repeatable', collect)
    .option(
      '--type <column>',
      'widen a column type: "name NEWTYPE" (INT→BIGINT, FLOAT→DOUBLE, DECIMAL precision up), repeatable',
      collect,
    )
    .option('--set <key=value>', 'set a table option that may change after creation, repeatable', collect)
    .option('--reset <key>', 'reset a table option to its default, repeatable', collect)
    .option('--comment <text>', 'set the table comment')
    .action(async (name: string, o: AlterFlags) => {
      const table = await catalog().getTable(name);
      const result = await table.alter(await schemaChangesOf(o));
      out(
        `altered ${table.name}: schema ${result.schema.id}${result.snapshot ? `, snapshot ${result.snapshot.id}` : ''}\n`,
      );
    });
}

/** The schema changes the flags ask for, in flag order by kind. */
async function schemaChangesOf(o: AlterFlags): Promise<SchemaChange[]> {
  const { parseAddColumn, parseTypeChange } = await import('../../schema/schema-evolution.js');
  return [
    ...(o.add ?? []).map(parseAddColumn),
    ...(o.rename ?? []).map((r): SchemaChange => {
      const i = r.indexOf('=');
      if (i <= 0 || i === r.length - 1) throw new InvalidArgumentError(`--rename "${r}" must look like old=new`);
      return { kind: 'rename-column', from: r.slice(0, i).trim(), to: r.slice(i + 1).trim() };
    }),
    ...(o.drop ?? []).map((d): SchemaChange => ({ kind: 'drop-column', name: d.trim() })),
    ...(o.type ?? []).map(parseTypeChange),
    ...Object.entries(parseOptionPairs(o.set)).map(
      ([key, value]): SchemaChange => ({ kind: 'set-option', key, value }),
    ),
    ...(o.reset ?? []).map((key): SchemaChange => ({ kind: 'reset-option', key: key.trim() })),
    ...(o.comment !== undefined ? [{ kind: 'update-comment', comment: o.comment } as SchemaChange] : []),
  ];
}
