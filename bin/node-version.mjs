// The Node versions varve runs on, as package.json's engines says: data file checksums use
// node:zlib's crc32, which Node has from 20.15 (the 20 line) and 22.2 on (never in 21). The
// launcher checks this before it loads anything of varve, so an older Node gets one clear line
// instead of a SyntaxError about an export node:zlib lacks.

/** The supported range, as package.json's engines field writes it. */
export const SUPPORTED_NODE = '^20.15.0 || >=22.2.0';

/** Why Node `version` (process.versions.node, e.g. "20.14.0") cannot run varve, or undefined when it can. */
export function unsupportedNode(version) {
  const [major, minor] = version.split('.').map(Number);
  if ((major === 20 && minor >= 15) || (major === 22 && minor >= 2) || major > 22) return undefined;
  return (
    `varve needs Node 20.15 or later on the 20 line, or 22.2 or later (${SUPPORTED_NODE}); this is Node ${version}, ` +
    "whose node:zlib has no crc32 (varve's data file checksums). Install a current Node 22 LTS (or 20.15+) and run it again"
  );
}
