/**
 * The catalog opener of a CLI command, loaded by its action (lib/cli/main.ts): a folder or memory
 * warehouse with the folder catalog opens without the AWS SDK, whose ≈ 0.8 MB of bundled code a
 * cold command would otherwise parse and run before its first read; S3, or the DynamoDB catalog
 * (VARVE_CATALOG_TABLE), loads lib/catalog/open-catalog.ts and the SDK with it.
 */
import type { Catalog } from '../catalog/catalog.js';
import type { CatalogEnv } from '../catalog/open-catalog.js';
import { FolderCatalog } from '../catalog/folder-catalog.js';
import { openLocalStore, storeLocation } from '../store/store-uri.js';

/** How a command opens the catalog of the warehouse at `uri` (an `openStore` URI) under `env`. */
export async function catalogOpener(uri: string, env: CatalogEnv = process.env): Promise<(uri: string) => Catalog> {
  // An invalid URI is told by openCatalog, as before (its error names what is accepted).
  let local: boolean;
  try {
    local = storeLocation(uri).scheme !== 's3' && !env.VARVE_CATALOG_TABLE?.trim();
  } catch {
    local = false;
  }
  if (!local) {
    const { openCatalog } = await import('../catalog/open-catalog.js');
    return (at) => openCatalog(at, env);
  }
  return (at) => {
    const location = storeLocation(at);
    if (location.scheme === 's3') throw new Error(`the folder catalog opener was given ${at}; this is a bug in varve`);
    return new FolderCatalog(openLocalStore(location));
  };
}
