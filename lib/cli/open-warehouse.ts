/**
 * The catalog opener of a CLI command, loaded by its action (lib/cli/main.ts). The folder catalog
 * (no VARVE_CATALOG_TABLE) over a folder or memory warehouse opens without the AWS SDK, whose
 * ≈ 0.8 MB of bundled code a cold command would otherwise parse and run before its first read; on
 * S3 it loads the S3 client only. The DynamoDB catalog loads lib/catalog/open-catalog.ts, and the
 * DynamoDB client with it.
 */
import type { Catalog } from '../catalog/catalog.js';
import type { CatalogEnv } from '../catalog/open-catalog.js';
import { FolderCatalog } from '../catalog/folder-catalog.js';
import { openLocalStore, storeLocation, type StoreLocation } from '../store/store-uri.js';

/** How a command opens the catalog of the warehouse at `uri` (an `openStore` URI) under `env`. */
export async function catalogOpener(uri: string, env: CatalogEnv = process.env): Promise<(uri: string) => Catalog> {
  // An invalid URI is told by openCatalog, as before (its error names what is accepted).
  let location: StoreLocation | undefined;
  try {
    location = storeLocation(uri);
  } catch {
    location = undefined;
  }
  if (location === undefined || env.VARVE_CATALOG_TABLE?.trim()) {
    const { openCatalog } = await import('../catalog/open-catalog.js');
    return (at) => openCatalog(at, env);
  }
  if (location.scheme === 's3') {
    const { openStore } = await import('../store/open-store.js');
    return (at) => new FolderCatalog(openStore(at));
  }
  return (at) => {
    const local = storeLocation(at);
    if (local.scheme === 's3') throw new Error(`the local catalog opener was given ${at}; this is a bug in varve`);
    return new FolderCatalog(openLocalStore(local));
  };
}
