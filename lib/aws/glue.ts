/**
 * The Iceberg export on AWS and its Glue Data Catalog registration (infra/table.ts, prop `glue`):
 * after a function that commits (commit, compact, ingest in direct mode) has run, the export runs
 * when due, and the Glue table named by
 * VARVE_GLUE_DATABASE / VARVE_GLUE_TABLE gets the current `v<N>.metadata.json` as its
 * `metadata_location` (the one it replaces as `previous_metadata_location`), so Athena reads the
 * latest export. Best effort: the commit has landed whatever happens here; a failure is logged
 * and the next invocation, which compares Glue with the current export again, repairs it. Glue
 * never moves back: an export older than the one Glue names (a slower concurrent function) is
 * left alone, and UpdateTable carries the VersionId it read. A Glue table that is missing (deleted
 * by hand, or by the cleanup of a stack update from the AWS::Glue::Table of older varve versions
 * to the custom resource) is created again, at the current export.
 */
import {
  CreateTableCommand,
  GlueClient,
  GetTableCommand,
  UpdateTableCommand,
  type Table as GlueTable,
  type TableInput,
} from '@aws-sdk/client-glue';
import {
  icebergLocation,
  metadataFileKey,
  readCurrentIcebergMetadata,
  readVersionHint,
  storeUri,
} from '../iceberg/iceberg-metadata.js';
import { exportIcebergAfterCommit } from '../iceberg/export-trigger.js';
import type { Table } from '../table/table.js';
import type { Env } from './env.js';
import { log } from './telemetry.js';

let glue: GlueClient | undefined;

/** The container's Glue client. */
function glueClient(): GlueClient {
  return (glue ??= new GlueClient({}));
}

/** Per Glue table: the metadata location this container last saw there, to skip Glue when unchanged. */
const synced = new Map<string, string>();

const VERSION = /\/v(\d+)\.metadata\.json$/;

/** The version number of a `.../v<N>.metadata.json` location, or 0 for anything else. */
function versionOf(location: string | undefined): number {
  const m = location === undefined ? null : VERSION.exec(location);
  return m ? Number(m[1]) : 0;
}

/** The URI of `table`'s current Iceberg metadata file, or undefined when there is none yet. */
async function currentMetadataUri(table: Table): Promise<string | undefined> {
  const loc = icebergLocation(table);
  if (loc === undefined) return undefined;
  const hint = await readVersionHint(table.store, loc);
  if (hint !== undefined && hint.version > 0) return storeUri(table.store, metadataFileKey(loc, hint.version));
  const current = await readCurrentIcebergMetadata(table.store, loc);
  return current && storeUri(table.store, current.key);
}

/**
 * Points the Glue table at `table`'s current Iceberg export when the environment names one
 * (see the file comment); never throws. Returns the location Glue was moved to, if it was.
 */
export async function syncGlueMetadataLocation(env: Env, table: Table): Promise<string | undefined> {
  const DatabaseName = env.VARVE_GLUE_DATABASE;
  const Name = env.VARVE_GLUE_TABLE;
  if (!DatabaseName || !Name) return undefined;
  const key = `${DatabaseName}.${Name}`;
  try {
    const uri = await currentMetadataUri(table);
    if (uri === undefined || synced.get(key) === uri) return undefined;
    const t = await getGlueTable(DatabaseName, Name);
    if (t === undefined) {
      await glueClient().send(new CreateTableCommand({ DatabaseName, TableInput: newGlueTable(table, Name, uri) }));
      synced.set(key, uri);
      log().warn(
        'the Glue table was missing (deleted, or dropped by a stack update); it was created again at the current Iceberg export',
        { table: table.name, glueTable: key, metadataLocation: uri },
      );
      return uri;
    }
    const previous = t?.Parameters?.metadata_location;
    if (previous === uri || versionOf(previous) > versionOf(uri)) {
      synced.set(key, uri);
      return undefined;
    }
    const input: TableInput = {
      Name,
      Description: t?.Description,
      Owner: t?.Owner,
      TableType: t?.TableType ?? 'EXTERNAL_TABLE',
      StorageDescriptor: t?.StorageDescriptor,
      PartitionKeys: t?.PartitionKeys,
      Parameters: {
        ...t?.Parameters,
        table_type: 'ICEBERG',
        metadata_location: uri,
        ...(previous ? { previous_metadata_location: previous } : {}),
      },
    };
    await glueClient().send(new UpdateTableCommand({ DatabaseName, TableInput: input, VersionId: t?.VersionId }));
    synced.set(key, uri);
    log().info('Glue table points at the new Iceberg export', {
      table: table.name,
      glueTable: key,
      metadataLocation: uri,
    });
    return uri;
  } catch (e) {
    log().warn('the Glue table was not pointed at the new Iceberg export; the next commit or compaction retries', {
      table: table.name,
      glueTable: key,
      error: e as Error,
    });
    return undefined;
  }
}

/** The Glue table, or undefined when Glue has none of that name (EntityNotFoundException). */
async function getGlueTable(DatabaseName: string, Name: string): Promise<GlueTable | undefined> {
  try {
    return (await glueClient().send(new GetTableCommand({ DatabaseName, Name }))).Table;
  } catch (e) {
    if ((e as { name?: string }).name === 'EntityNotFoundException') return undefined;
    throw e;
  }
}

/** The Glue table infra/table.ts registers (Custom::VarveGlueTable), pointed at `uri`. */
function newGlueTable(table: Table, Name: string, uri: string): TableInput {
  return {
    Name,
    Description: `varve table ${table.name} (Iceberg export)`,
    TableType: 'EXTERNAL_TABLE',
    Parameters: { table_type: 'ICEBERG', metadata_location: uri },
    StorageDescriptor: { Location: storeUri(table.store, table.path) },
  };
}

/**
 * What follows a function's commits when the table exports Iceberg metadata: the export when due
 * (lib/iceberg/export-trigger.ts; the functions' commit paths do not run it themselves), then
 * the Glue table pointed at it. Never throws: a failed export is logged and redone by the next
 * invocation, like a failed Glue update.
 */
export async function exportAndRegister(env: Env, table: Table): Promise<void> {
  const failed = await exportIcebergAfterCommit(table);
  if (failed)
    log().warn('the Iceberg export failed; the next commit or compaction redoes it', {
      table: table.name,
      error: failed,
    });
  await syncGlueMetadataLocation(env, table);
}

/** `work`'s result, once the export it may have made due has run and Glue points at it (exportAndRegister). */
export async function thenExport<T>(env: Env, table: Table, work: Promise<T>): Promise<T> {
  const result = await work;
  await exportAndRegister(env, table);
  return result;
}
