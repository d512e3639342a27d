/**
 * Opening the catalog of a warehouse: the DynamoDB catalog when VARVE_CATALOG_TABLE names one
 * (what the AWS functions and a CLI pointed at a deployed warehouse get), the folder catalog
 * otherwise.
 */
import { openStore } from '../store/open-store.js';
import type { Catalog } from './catalog.js';
import { DynamoCatalog } from './dynamo-catalog.js';
import { FolderCatalog } from './folder-catalog.js';

/** Where the catalog choice comes from. */
export interface CatalogEnv {
  VARVE_CATALOG_TABLE?: string;
}

/** The catalog of the warehouse at `uri` (an `openStore` URI), chosen by `env` (see the file comment). */
export function openCatalog(uri: string, env: CatalogEnv = process.env): Catalog {
  const store = openStore(uri);
  const tableName = env.VARVE_CATALOG_TABLE?.trim();
  return tableName ? new DynamoCatalog(store, { tableName }) : new FolderCatalog(store);
}
