/** `varve describe`: the schema, keys and options of a table. */
import type { CliContext } from '../context.js';
import { renderRecords } from '../output.js';

/** Registers `describe`. */
export function registerDescribe({ program, catalog, out }: CliContext): void {
  program
    .command('describe')
    .description('show the schema, keys and options of a table')
    .argument('<table>', 'DB.TABLE')
    .action(async (name: string) => {
      const { formatType } = await import('../../schema/parse.js');
      const table = await catalog().getTable(name);
      const s = table.schema;
      const latest = await table.snapshots.latestId();
      const columns = s.fields.map((f) => ({
        column: f.name,
        type: formatType(f.type),
        'field id': f.id,
        comment: f.description ?? '',
      }));
      const lines = [
        `table       ${table.name}`,
        `location    ${table.store.uri}/${table.path}`,
        `uuid        ${s.tableUuid ?? 'none (created before table UUIDs; identified by its schema-0)'}`,
        `schema id   ${s.id}`,
        ...(s.comment !== undefined ? [`comment     ${s.comment}`] : []),
        `primary key ${s.primaryKeys.length ? s.primaryKeys.join(', ') : 'none (append table: rows are kept as written)'}`,
        `partitioned ${s.partitionKeys.length ? s.partitionKeys.join(', ') : 'no'}`,
        `snapshot    ${latest ?? 'none yet'}`,
        '',
        renderRecords(['column', 'type', 'field id', 'comment'], columns, 'table').trimEnd(),
        '',
        'options' + (Object.keys(s.options).length ? '' : '     (all defaults)'),
        ...Object.entries(s.options).map(([k, v]) => `  ${k} = ${v}`),
      ];
      out(lines.join('\n') + '\n');
    });
}
