/**
 * The table commands of the CLI: create, write, delete, read, describe, tables, drop, tag.
 */
import { parsePartitionSpec } from '../schema/partition.js';
import * as arrow from 'apache-arrow';
import type { Command } from 'commander';
import { InvalidArgumentError } from '../errors.js';
import { schemaChangeEvent } from '../stream/schema-change.js';
import { parseSchemaJson, parseSchemaText, formatType } from '../schema/parse.js';
import { createTag, deleteTag } from '../snapshot/tags.js';
import { formatFromFileName, type InputFormat } from '../table/input.js';
import { readAuditLog, parseIncrementalBetween } from '../table/audit-log.js';
import { readSystemTable, SYSTEM_TABLES } from '../table/system-tables.js';
import { icebergSystemTable } from '../iceberg/iceberg-status.js';
import { rollbackTo } from '../maintenance/rollback.js';
import { SEQUENCE_COLUMN } from '../schema/types.js';
import { parseAddColumn, parseTypeChange, type SchemaChange } from '../schema/schema-evolution.js';
import { displayRecords, openCatalog, warehouseUri } from './context.js';
import { RecordPrinter, renderRecords, type OutputFormat } from './output.js';
import { addSnapshotFlags, snapshotSpecOf, type GlobalOptions } from './parse-flags.js';
import { writeProgress } from './write-input.js';
import { runWriteJob } from '../table/write-job.js';
import { formatPredicate } from '../table/predicate.js';
import type { ReadExplain } from '../table/read-pruning.js';
import type { Table } from '../table/table.js';
import type { OverwriteMode } from '../table/writer.js';

type Out = (text: string) => void;

function list(value: string): string[] {
  return value.split(',').map((s) => s.trim()).filter(Boolean);
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

function parseOptionPairs(pairs: string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const i = p.indexOf('=');
    if (i <= 0) throw new InvalidArgumentError(`option "${p}" must look like key=value, e.g. -o bucket=4`);
    out[p.slice(0, i).trim()] = p.slice(i + 1).trim();
  }
  return out;
}

function inputFormat(file: string | undefined, flag: string | undefined): InputFormat {
  const f = flag ?? (file && file !== '-' ? formatFromFileName(file) : undefined) ?? 'jsonl';
  if (f !== 'jsonl' && f !== 'csv' && f !== 'parquet') throw new InvalidArgumentError(`--format must be jsonl, csv or parquet, got "${f}"`);
  return f;
}

function outputFormat(flag: string | undefined): OutputFormat {
  const f = flag ?? 'table';
  if (f !== 'table' && f !== 'jsonl' && f !== 'csv') throw new InvalidArgumentError(`--format must be table, jsonl or csv, got "${f}"`);
  return f;
}

/** Rows per printed batch: the most row objects that exist at a time. */
const PRINT_SLICE_ROWS = 8192;

/** Registers the table commands on `program`; `globals()` gives the global flags, `out` prints. */
export function registerTableCommands(program: Command, globals: () => GlobalOptions, out: Out): void {
  const catalog = () => openCatalog(warehouseUri(globals().warehouse));

  program
    .command('create')
    .description('create a table: a primary-key table, or without --primary-key an append table (rows kept as written)')
    .argument('<table>', 'DB.TABLE')
    .requiredOption('--schema <schema>', 'columns in SQL form, e.g. "id BIGINT, name STRING", or a JSON array of {name, type}')
    .option('--primary-key <cols>', 'primary key columns, comma separated (none: an append table, bucket=-1 unless -o bucket=N -o bucket-key=cols)')
    .option('--partition-keys <cols>', 'partition columns, comma separated (part of the primary key, if there is one)')
    .option('-o, --option <key=value>', 'table option, repeatable (e.g. -o bucket=4 -o merge-engine=aggregation)', collect)
    .option('--comment <text>', 'table comment')
    .option('--if-not-exists', 'do nothing when the table exists')
    .action(async (name: string, o) => {
      const text = String(o.schema).trim();
      const fields = text.startsWith('[') || text.startsWith('{') ? parseSchemaJson(text) : parseSchemaText(text);
      const table = await catalog().createTable(
        name,
        { fields, primaryKeys: o.primaryKey === undefined ? [] : list(o.primaryKey), partitionKeys: o.partitionKeys ? list(o.partitionKeys) : [], options: parseOptionPairs(o.option), comment: o.comment },
        { ignoreIfExists: Boolean(o.ifNotExists) },
      );
      const kind = table.schema.primaryKeys.length === 0 ? ` (append table, ${table.options.bucket === -1 ? 'bucket-unaware' : `${table.options.bucket} buckets by ${table.options.bucketKey.join(', ')}`})` : '';
      out(`created ${table.name}${kind} at ${table.store.uri}/${table.path}\n`);
    });

  const writeAction = (deletes: boolean) => async (name: string, file: string | undefined, o: { format?: string; skipInvalid?: string; commitIdentifier?: string; commitUser?: string; overwrite?: boolean; dynamicPartitionOverwrite?: string; where?: string }) => {
    const table = await catalog().getTable(name);
    const status = (text: string) => program.configureOutput().writeErr?.(text);
    if (deletes && o.where !== undefined) {
      if (file !== undefined) throw new InvalidArgumentError('give either --where or a file of keys to delete, not both');
      const result = await table.deleteWhere(o.where, { commitUser: o.commitUser, commitIdentifier: o.commitIdentifier });
      out(result.rows === 0 ? 'no row matches: nothing deleted\n' : `deleted ${result.rows} rows, snapshot ${result.snapshot?.id}\n`);
      return;
    }
    let overwrite: OverwriteMode | undefined;
    if (o.overwrite) {
      const flag = o.dynamicPartitionOverwrite;
      if (flag !== undefined && flag !== 'true' && flag !== 'false') throw new InvalidArgumentError(`--dynamic-partition-overwrite must be true or false, got "${flag}"`);
      const dynamic = (flag !== undefined ? flag === 'true' : (table.options.get('dynamic-partition-overwrite') as boolean)) && table.schema.partitionKeys.length > 0;
      overwrite = dynamic ? 'dynamic' : 'all';
    } else if (o.dynamicPartitionOverwrite !== undefined) throw new InvalidArgumentError('--dynamic-partition-overwrite goes with --overwrite');
    const format = inputFormat(file, o.format);
    const source = file && file !== '-' ? { file } : { stream: process.stdin as AsyncIterable<Uint8Array> };
    const { commit: result, rejected } = await runWriteJob(table, source, {
      format,
      deletes,
      rejectsFile: o.skipInvalid,
      commitUser: o.commitUser,
      commitIdentifier: o.commitIdentifier,
      overwrite,
      progress: writeProgress,
      onSchemaChange: (from, to) => {
        const event = schemaChangeEvent(0, from, to);
        status(`the schema of ${table.name} changed during the write (schema ${event.from} -> ${event.to}: ${event.changes.join('; ') || 'options'}); writing again under schema ${event.to}\n`);
      },
    });
    if (!result) {
      out(`nothing to ${deletes ? 'delete' : 'write'}${rejected ? ` (${rejected} rejected, see ${o.skipInvalid})` : ''}\n`);
      return;
    }
    const rejectedText = rejected ? `, ${rejected} rejected (see ${o.skipInvalid})` : '';
    if (result.alreadyCommitted) {
      const where = result.snapshot ? `as snapshot ${result.snapshot.id}` : `as snapshot ${result.expiredSnapshotId}, which has expired since`;
      out(`already committed ${where}: nothing written twice\n`);
    } else out(`${deletes ? 'deleted' : overwrite ? `overwrote ${overwrite === 'all' ? 'the table' : 'the partitions written to'} with` : 'wrote'} ${result.rows} rows in ${result.files} files, snapshot ${result.snapshot?.id}${rejectedText}\n`);
  };

  program
    .command('write')
    .description('write rows (one commit per call); a JSONL row may carry "_kind": "-D" to delete')
    .argument('<table>', 'DB.TABLE')
    .argument('[file]', 'input file, or - for stdin (default)')
    .option('--format <format>', 'jsonl, csv or parquet (default: from the file name, else jsonl)')
    .option('--skip-invalid <file>', 'commit the valid rows and write the rejected ones, with reasons, to this file')
    .option('--commit-identifier <id>', 'idempotence key, unique in the table: a retried write with the same id commits nothing, from any process, however late')
    .option('--commit-user <user>', 'who commits, recorded in the snapshot (default: a random writer-<uuid>)')
    .option('--overwrite', 'replace instead of upsert (one OVERWRITE snapshot): the partitions the rows go to, or the whole table (see --dynamic-partition-overwrite)')
    .option('--dynamic-partition-overwrite <bool>', 'with --overwrite: true replaces only the partitions written to, false the whole table (default: the table option, true as in Paimon)')
    .action(writeAction(false));

  program
    .command('truncate')
    .description('remove every row (one OVERWRITE snapshot; time travel still reads the old ones)')
    .argument('<table>', 'DB.TABLE')
    .action(async (name: string) => {
      const result = await (await catalog().getTable(name)).truncate();
      out(`truncated ${name}, snapshot ${result.snapshot?.id}\n`);
    });

  program
    .command('drop-partition')
    .description('remove the partitions matching k=v[,k=v] (one OVERWRITE snapshot)')
    .argument('<table>', 'DB.TABLE')
    .argument('<partition>', 'e.g. dt=2024-05-01 or dt=2024-05-01,region=eu (a partial spec drops every partition under it)')
    .action(async (name: string, spec: string) => {
      const result = await (await catalog().getTable(name)).dropPartition(parsePartitionSpec(spec));
      out(`dropped partition ${spec} of ${name}, snapshot ${result.snapshot?.id}\n`);
    });

  program
    .command('rescale')
    .description('rewrite the data into a new number of buckets (one OVERWRITE snapshot); without --partition the table\'s bucket option changes too')
    .argument('<table>', 'DB.TABLE')
    .requiredOption('--buckets <n>', 'the new bucket count')
    .option('--partition <spec>', 'only the partitions matching k=v[,k=v]; others keep their bucket count')
    .option('--force', 'rescale although a streaming consumer has not caught up (streams skip the OVERWRITE)')
    .action(async (name: string, o: { buckets: string; partition?: string; force?: boolean }) => {
      const buckets = Number(o.buckets);
      if (!/^\d+$/.test(o.buckets.trim()) || buckets < 1) throw new InvalidArgumentError(`--buckets must be an integer ≥ 1, got "${o.buckets}"`);
      const table = await catalog().getTable(name);
      const r = await table.rescale({ buckets, partition: o.partition === undefined ? undefined : parsePartitionSpec(o.partition), force: Boolean(o.force) });
      const what = (p: string) => (p === '' ? 'the table' : p);
      const lines: string[] = [];
      if (r.optionChanged) lines.push(`bucket = ${buckets}: new partitions get ${buckets} buckets`);
      if (r.snapshot) lines.push(`rescaled ${r.partitions.map(what).join(', ')} to ${buckets} buckets: ${r.rows} rows, ${r.filesRemoved} files replaced by ${r.filesAdded}, snapshot ${r.snapshot.id} (OVERWRITE)`);
      if (r.unchanged.length) lines.push(`already ${buckets} buckets: ${r.unchanged.map(what).join(', ')}`);
      if (lines.length === 0) lines.push('nothing to rescale: the table has no data');
      out(lines.join('\n') + '\n');
    });

  program
    .command('delete')
    .description('delete the rows whose primary keys are given, or (--where) the rows matching a predicate')
    .option('--where <predicate>', `delete the rows matching a predicate, e.g. "status = 'cancelled'" (writes a -D per matching key; an append table's files are rewritten without the rows)`)
    .argument('<table>', 'DB.TABLE')
    .argument('[file]', 'input file with the keys, or - for stdin (default)')
    .option('--format <format>', 'jsonl, csv or parquet')
    .option('--skip-invalid <file>', 'delete the valid keys and write the rejected ones to this file')
    .option('--commit-identifier <id>', 'idempotence key, unique in the table')
    .option('--commit-user <user>', 'who commits, recorded in the snapshot')
    .action(writeAction(true));

  addSnapshotFlags(program.command('read'), 'read')
    .description('read the merged rows of a table, at the latest snapshot or back in time')
    .argument('<table>', 'DB.TABLE')
    .option('--columns <cols>', 'columns to print, comma separated')
    .option('--partition <spec>', 'only this partition, e.g. dt=2024-01-01,region=eu')
    .option('--where <predicate>', `only rows matching a predicate, e.g. "amount >= 10 AND status IN ('paid', 'new')" (= != < <= > >= IN, IS [NOT] NULL, AND, OR, NOT)`)
    .option('--limit <n>', 'at most this many rows')
    .option('--explain', 'print what the read pruned (partitions, file key ranges) and read, instead of the rows')
    .option('--format <format>', 'table, jsonl or csv', 'table')
    .action(async (name: string, o) => {
      const table = await catalog().getTable(name);
      const format = outputFormat(o.format);
      let explained: ReadExplain | undefined;
      const batches = table.scan({
        ...snapshotSpecOf(o),
        columns: o.columns ? list(o.columns) : undefined,
        partition: o.partition ? parsePartitionSpec(o.partition) : undefined,
        where: o.where,
        limit: o.limit !== undefined ? parseNonNegativeInt('--limit', o.limit) : undefined,
        explain: o.explain ? (e) => (explained = e) : undefined,
        batchRows: PRINT_SLICE_ROWS,
        // Each batch is turned into display records before the next is asked for.
        reuseBuffers: true,
      });
      // Prints as it reads: memory holds a batch of rows, not the table.
      let printer: RecordPrinter | undefined;
      for await (const batch of batches) {
        if (o.explain) continue;
        const { columns, records } = displayRecords(new arrow.Table(batch), table.schema.fields);
        printer ??= new RecordPrinter(columns, format, out);
        printer.add(records);
      }
      if (explained) {
        out(explainText(explained, table) + '\n');
        return;
      }
      printer?.end();
    });

  addSnapshotFlags(program.command('count'), 'count at')
    .description('count the merged rows of a table (optionally only those matching --where)')
    .argument('<table>', 'DB.TABLE')
    .option('--where <predicate>', 'only rows matching a predicate')
    .action(async (name: string, o) => {
      const table = await catalog().getTable(name);
      out(`${await table.count({ ...snapshotSpecOf(o), where: o.where })}\n`);
    });

  addSnapshotFlags(program.command('audit-log'), 'at')
    .description('rows with their row kind (+I, -U, +U, -D), at a snapshot or between two')
    .argument('<table>', 'DB.TABLE')
    .option('--incremental-between <a,b>', 'changes after snapshot A up to snapshot B')
    .option('--mode <mode>', 'delta (merged new files) or changelog (changelog files)', 'delta')
    .option('--where <predicate>', 'only rows matching a predicate')
    .option('--format <format>', 'table, jsonl or csv', 'table')
    .action(async (name: string, o) => {
      const table = await catalog().getTable(name);
      if (o.mode !== 'delta' && o.mode !== 'changelog') throw new InvalidArgumentError(`--mode must be delta or changelog, got "${o.mode}"`);
      const result = await readAuditLog(table, {
        ...snapshotSpecOf(o),
        incrementalBetween: o.incrementalBetween ? parseIncrementalBetween(o.incrementalBetween) : undefined,
        mode: o.mode,
        where: o.where,
      });
      const { columns, records } = displayRecords(result.select(result.schema.fields.map((f) => f.name).filter((n) => n !== SEQUENCE_COLUMN)), table.schema.fields);
      out(renderRecords(columns, records, outputFormat(o.format)));
    });

  program
    .command('sys')
    .description(`system tables: ${[...SYSTEM_TABLES, 'iceberg'].join(', ')}`)
    .argument('<table>', 'DB.TABLE')
    .argument('<name>', [...SYSTEM_TABLES, 'iceberg'].join('|'))
    .option('--snapshot <id>', 'for files, manifests, buckets, partitions and statistics: at this snapshot', Number)
    .option('--format <format>', 'table, jsonl or csv', 'table')
    .action(async (name: string, sys: string, o) => {
      const table = await catalog().getTable(name);
      // `iceberg` lives above the table layer (lib/iceberg), so it is dispatched here.
      const { columns, records } = sys === 'iceberg' ? await icebergSystemTable(table) : await readSystemTable(table, sys, { snapshotId: o.snapshot });
      out(renderRecords(columns, records, outputFormat(o.format)));
    });

  program
    .command('tag')
    .description('create or delete a tag (a named snapshot kept by expiry)')
    .argument('<table>', 'DB.TABLE')
    .argument('<action>', 'create or delete')
    .argument('<name>', 'tag name')
    .option('--snapshot <id>', 'snapshot to tag (default: latest)', Number)
    .action(async (name: string, action: string, tag: string, o) => {
      const table = await catalog().getTable(name);
      if (action === 'create') {
        const snapshot = await table.snapshotFor({ snapshotId: o.snapshot });
        if (!snapshot) throw new InvalidArgumentError(`${table.name} has no snapshot to tag yet; write to it first`);
        await createTag(table.store, table.path, tag, snapshot);
        out(`tag ${tag} -> snapshot ${snapshot.id}\n`);
      } else if (action === 'delete') {
        await deleteTag(table.store, table.path, tag);
        out(`deleted tag ${tag}\n`);
      } else {
        throw new InvalidArgumentError(`tag action must be create or delete, got "${action}"`);
      }
    });

  program
    .command('rollback')
    .description('go back to a snapshot or tag: newer snapshots and tags are removed with the files only they used, consumers past it move back')
    .argument('<table>', 'DB.TABLE')
    .option('--to-snapshot <id>', 'the snapshot to go back to')
    .option('--to-tag <name>', 'the tag to go back to (its snapshot is written back if it has expired)')
    .action(async (name: string, o: { toSnapshot?: string; toTag?: string }) => {
      if ((o.toSnapshot === undefined) === (o.toTag === undefined)) {
        throw new InvalidArgumentError('rollback needs exactly one of --to-snapshot N or --to-tag NAME');
      }
      const table = await catalog().getTable(name);
      const target = o.toTag !== undefined ? { tag: o.toTag } : { snapshotId: parseNonNegativeInt('--to-snapshot', o.toSnapshot!) };
      const r = await rollbackTo(table, target);
      const removed = r.removedSnapshots.length ? `removed snapshots ${[...r.removedSnapshots].sort((a, b) => a - b).join(', ')}` : 'no newer snapshot to remove';
      const lines = [`rolled back ${table.name} to snapshot ${r.target}${r.restoredFromTag ? ` (written back from tag ${o.toTag})` : ''}: ${removed}`];
      if (r.removedTags.length) lines.push(`removed tags ${r.removedTags.join(', ')}`);
      for (const c of r.resetConsumers) lines.push(`consumer ${c.id} moved back from snapshot ${c.from} to ${c.to}`);
      const d = r.deleted;
      lines.push(`deleted ${d.dataFiles} data files, ${d.changelogFiles} changelog files, ${d.manifests} manifests, ${d.manifestLists} manifest lists`);
      out(lines.join('\n') + '\n');
    });

  program
    .command('tables')
    .description('list the tables of the warehouse')
    .option('--database <db>', 'only this database')
    .action(async (o) => {
      const names = await catalog().listTables(o.database);
      out(names.length ? names.join('\n') + '\n' : 'no tables yet; create one with `varve create`\n');
    });

  program
    .command('describe')
    .description('show the schema, keys and options of a table')
    .argument('<table>', 'DB.TABLE')
    .action(async (name: string) => {
      const table = await catalog().getTable(name);
      const s = table.schema;
      const latest = await table.snapshots.latestId();
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
        renderRecords(['column', 'type', 'field id', 'comment'], s.fields.map((f) => ({ column: f.name, type: formatType(f.type), 'field id': f.id, comment: f.description ?? '' })), 'table').trimEnd(),
        '',
        'options' + (Object.keys(s.options).length ? '' : '     (all defaults)'),
        ...Object.entries(s.options).map(([k, v]) => `  ${k} = ${v}`),
      ];
      out(lines.join('\n') + '\n');
    });

  program
    .command('alter')
    .description('change the schema: add, rename, drop or widen columns, set or reset options, set the comment (old files are read by field id)')
    .argument('<table>', 'DB.TABLE')
    .option('--add <column>', 'add a nullable column: "name TYPE [COMMENT \'…\'] [AFTER col | FIRST]", repeatable', collect)
    .option('--rename <old=new>', 'rename a column, repeatable', collect)
    .option('--drop <column>', 'drop a column (not a key or partition column), repeatable', collect)
    .option('--type <column>', 'widen a column type: "name NEWTYPE" (INT→BIGINT, FLOAT→DOUBLE, DECIMAL precision up), repeatable', collect)
    .option('--set <key=value>', 'set a table option that may change after creation, repeatable', collect)
    .option('--reset <key>', 'reset a table option to its default, repeatable', collect)
    .option('--comment <text>', 'set the table comment')
    .action(async (name: string, o: { add?: string[]; rename?: string[]; drop?: string[]; type?: string[]; set?: string[]; reset?: string[]; comment?: string }) => {
      const table = await catalog().getTable(name);
      const changes: SchemaChange[] = [
        ...(o.add ?? []).map(parseAddColumn),
        ...(o.rename ?? []).map((r): SchemaChange => {
          const i = r.indexOf('=');
          if (i <= 0 || i === r.length - 1) throw new InvalidArgumentError(`--rename "${r}" must look like old=new`);
          return { kind: 'rename-column', from: r.slice(0, i).trim(), to: r.slice(i + 1).trim() };
        }),
        ...(o.drop ?? []).map((d): SchemaChange => ({ kind: 'drop-column', name: d.trim() })),
        ...(o.type ?? []).map(parseTypeChange),
        ...Object.entries(parseOptionPairs(o.set)).map(([key, value]): SchemaChange => ({ kind: 'set-option', key, value })),
        ...(o.reset ?? []).map((key): SchemaChange => ({ kind: 'reset-option', key: key.trim() })),
        ...(o.comment !== undefined ? [{ kind: 'update-comment', comment: o.comment } as SchemaChange] : []),
      ];
      const result = await table.alter(changes);
      out(`altered ${table.name}: schema ${result.schema.id}${result.snapshot ? `, snapshot ${result.snapshot.id}` : ''}\n`);
    });

  program
    .command('drop')
    .description('drop a table and delete all of its files')
    .argument('<table>', 'DB.TABLE')
    .action(async (name: string) => {
      await catalog().dropTable(name);
      out(`dropped ${name}\n`);
    });

}

function parseNonNegativeInt(flag: string, text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n)) throw new InvalidArgumentError(`${flag} must be an integer ≥ 0, got "${text}"`);
  return n;
}

/** The `read --explain` report. */
function explainText(e: ReadExplain, table: Table): string {
  const types = new Map(table.schema.fields.map((f) => [f.name, f.type]));
  return [
    `snapshot            ${e.snapshotId ?? 'none (empty table)'} (schema ${e.schemaId})`,
    `predicate           ${e.predicate ? formatPredicate(e.predicate, types) : '(none)'}`,
    `live files          ${e.liveFiles}`,
    `skipped: partition  ${e.skippedByPartition}`,
    `skipped: key range  ${e.skippedByKeyRange}`,
    `skipped: value stats ${e.skippedByValueStats} (append tables: column min/max/nulls)`,
    `files read          ${e.filesRead}`,
    `rows merged         ${e.mergedRows}`,
    `rows matching       ${e.matchingRows} (predicate applied after the merge)`,
  ].join('\n');
}
