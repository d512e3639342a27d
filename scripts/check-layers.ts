/**
 * The layer check (docs/ARCHITECTURE.md): every relative import must point to the same layer or a
 * lower one, and no file may reach itself through imports. Fails (exit 1) with each back-edge and
 * each cycle named, so CI stops a layering slip the moment it is written.
 *
 *   store → schema → format → manifest → snapshot → mergetree → table → iceberg → maintenance | stream
 *   → catalog → aws → runtime → cli, then functions/ and infra/ on top; e2e/, bench/ and test/ above all.
 *
 * Files directly in lib/ (errors, concurrency, aws-contract) import nothing of varve and sit below
 * every layer.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Rank of each layer; an import may go to a lower rank, or to the same folder. */
const RANKS: Record<string, number> = {
  'lib/': 0,
  'lib/store': 1,
  'lib/schema': 2,
  'lib/format': 3,
  'lib/manifest': 4,
  'lib/snapshot': 5,
  'lib/mergetree': 6,
  'lib/table': 7,
  'lib/iceberg': 7.5,
  'lib/maintenance': 8,
  'lib/stream': 8,
  'lib/catalog': 9,
  'lib/aws': 9.5,
  'lib/runtime': 10,
  'lib/cli': 11,
  'lib/index.ts': 12,
  functions: 13,
  infra: 14,
  e2e: 15,
  bench: 15,
  scripts: 15,
  test: 16,
};

/**
 * Edges allowed although they cross upward, each with its reason. The example app is user code:
 * its sink imports the stream handler a user would import from `varve/aws`. The benchmarks start
 * moto with the one moto starter of the repository (e2e/aws/moto.ts, also the tests').
 */
const ALLOWED = new Set([
  'infra/example-sink.ts -> functions/shared/stream-handler.ts',
  'bench/run.ts -> e2e/aws/moto.ts',
]);

function layerOf(file: string): string {
  const parts = file.split('/');
  if (parts[0] === 'lib') return parts.length === 2 ? (file === 'lib/index.ts' ? file : 'lib/') : `lib/${parts[1]}`;
  return parts[0];
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const rel = `${dir}/${name}`;
    if (statSync(join(ROOT, rel)).isDirectory()) out.push(...sourceFiles(rel));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s([^'";]*?)from\s*'(\.{1,2}\/[^']+)'|import\(\s*'(\.{1,2}\/[^']+)'\s*\)/g;

interface Import {
  to: string;
  /** `import type` / `export type`: erased at run time, so it cannot take part in a load cycle. */
  typeOnly: boolean;
}

/** The relative imports of a file, as repository paths of .ts files. */
function importsOf(file: string): Import[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const out: Import[] = [];
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[2] ?? m[3];
    if (!spec.endsWith('.js')) continue;
    out.push({
      to: relative(ROOT, resolve(ROOT, dirname(file), spec.replace(/\.js$/, '.ts'))),
      typeOnly: /^type\s/.test(m[1] ?? ''),
    });
  }
  return out;
}

export interface LayerReport {
  backEdges: string[];
  cycles: string[][];
}

/** Back-edges and import cycles among the given folders' files. */
export function checkLayers(folders = ['lib', 'functions', 'infra', 'e2e', 'bench', 'scripts', 'test']): LayerReport {
  const files = folders.flatMap(sourceFiles);
  const graph = new Map(files.map((f) => [f, importsOf(f)]));
  const backEdges: string[] = [];
  for (const [from, imports] of graph) {
    const a = layerOf(from);
    for (const { to } of imports) {
      const b = layerOf(to);
      const edge = `${from} -> ${to}`;
      if (a === b || ALLOWED.has(edge)) continue;
      const ra = RANKS[a];
      const rb = RANKS[b];
      if (ra === undefined || rb === undefined || rb >= ra) backEdges.push(`${edge}  (${a} may not import ${b})`);
    }
  }
  const runtime = new Map([...graph].map(([f, imports]) => [f, imports.filter((i) => !i.typeOnly).map((i) => i.to)]));
  return { backEdges, cycles: findCycles(runtime) };
}

/** One cycle per strongly connected component of more than one file (Tarjan) among run-time imports. */
function findCycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) out.push(comp.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { backEdges, cycles } = checkLayers();
  for (const e of backEdges) console.error(`back-edge: ${e}`);
  for (const c of cycles) console.error(`import cycle: ${c.join(' -> ')}`);
  if (backEdges.length || cycles.length) {
    console.error(
      `layer check failed: ${backEdges.length} back-edge(s), ${cycles.length} cycle(s); see docs/ARCHITECTURE.md`,
    );
    process.exit(1);
  }
  console.log('layer check: no back-edges, no cycles');
}
