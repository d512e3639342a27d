/**
 * Function length as a check that fails (issue 28): in lib/ and functions/, at most
 * MAX_LONG functions over LONG_LINES lines and none over MAX_LINES. A function's length is its
 * full span, first line to last, comments and blank lines included; a function nested in another
 * is counted on its own too (its lines also count towards the outer one). Functions are what the
 * TypeScript compiler calls function-like: declarations, expressions, arrows, methods,
 * constructors and accessors.
 *
 * Usage: npx tsx scripts/check-function-length.ts [--list N] — prints the longest functions and
 * exits 1 when a limit is broken.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIRS = ['lib', 'functions'];
const LONG_LINES = 80;
const MAX_LONG = 3;
const MAX_LINES = 120;

interface FunctionSpan {
  file: string;
  name: string;
  line: number;
  lines: number;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)))
    .sort();
}

/** The name a reader would search for: the declaration's, a method's Class.method, or the variable or property an arrow is assigned to. */
function nameOf(node: ts.SignatureDeclaration, sf: ts.SourceFile): string {
  const own = node.name && !ts.isComputedPropertyName(node.name) ? node.name.getText(sf) : undefined;
  const parent = node.parent;
  if (
    ts.isConstructorDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isGetAccessor(node) ||
    ts.isSetAccessor(node)
  ) {
    const cls = ts.isClassLike(parent) && parent.name ? `${parent.name.text}.` : '';
    return `${cls}${ts.isConstructorDeclaration(node) ? 'constructor' : (own ?? '<computed>')}`;
  }
  if (own) return own;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return parent.name.getText(sf);
  return '<anonymous>';
}

function functionSpans(file: string): FunctionSpan[] {
  const sf = ts.createSourceFile(file, readFileSync(path.join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
  const spans: FunctionSpan[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      spans.push({ file, name: nameOf(node, sf), line: first + 1, lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return spans;
}

const listArg = process.argv.indexOf('--list');
const list = listArg >= 0 ? Number(process.argv[listArg + 1]) : 0;
const spans = DIRS.flatMap(sourceFiles)
  .flatMap(functionSpans)
  .sort((a, b) => b.lines - a.lines);
const long = spans.filter((s) => s.lines > LONG_LINES);
const tooLong = spans.filter((s) => s.lines > MAX_LINES);
const describe = (s: FunctionSpan) => `  ${String(s.lines).padStart(4)}  ${s.name}  (${s.file}:${s.line})`;

for (const s of spans.slice(0, Math.max(list, long.length))) console.log(describe(s));
const problems: string[] = [];
if (tooLong.length > 0) problems.push(`${tooLong.length} function(s) over ${MAX_LINES} lines (none allowed)`);
if (long.length > MAX_LONG)
  problems.push(`${long.length} functions over ${LONG_LINES} lines (at most ${MAX_LONG} allowed)`);
if (problems.length > 0) {
  console.log(`function length check FAILED in ${DIRS.join('/, ')}/: ${problems.join('; ')}.`);
  console.log(
    `Split the function by job (a helper per step, named after what it does), or keep a hot path whole and say why there.`,
  );
  process.exit(1);
}
console.log(
  `function length check: ${long.length} of at most ${MAX_LONG} functions over ${LONG_LINES} lines, none over ${MAX_LINES}`,
);
