/**
 * Objects numbered contiguously (`snapshot-<id>`, `schema-<id>`): ids exist without gaps from the
 * oldest kept up to the newest, so the newest is found without a listing by probing forward at
 * growing steps until one is missing, then a binary search between the last present and the first
 * missing id (the gallop Paimon uses to check a LATEST hint).
 */

/**
 * The newest id, given that `present` exists: probes `probeAt(2)`, `probeAt(4)`, `probeAt(8)`, …
 * (each above the last) until one is missing, then bisects. `exists` is one HEAD (or GET) each.
 */
export async function newestNumbered(
  present: number,
  probeAt: (step: number) => number,
  exists: (id: number) => Promise<boolean>,
): Promise<number> {
  let missing: number | undefined;
  for (let step = 2; missing === undefined; step *= 2) {
    const id = probeAt(step);
    if (await exists(id)) present = id;
    else missing = id;
  }
  while (missing - present > 1) {
    const mid = Math.floor((present + missing) / 2);
    if (await exists(mid)) present = mid;
    else missing = mid;
  }
  return present;
}
