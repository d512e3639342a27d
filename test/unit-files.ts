/**
 * The test files that share their forks (vitest project `unit`, isolate: false), and the rule a
 * file must keep to be one of them: no module state one file changes may leak into the next file
 * of the same fork. test/unit-project.test.ts checks every listed file, and the test helpers it
 * imports, against the rule.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** Folders of test/ whose every test file is in the unit project. */
const UNIT_DIRS = ['schema', 'manifest', 'mergetree', 'snapshot', 'iceberg', 'catalog', 'stream', 'maintenance'];

/** Single files of other folders in the unit project. */
const UNIT_FILES = [
  ...[
    'arrow-import',
    'arrow-schema',
    'arrow-transfer',
    'columns',
    'data-file-stream',
    'decimal',
    'ipc-buffer',
    'parquet-splice',
  ].map((f) => `test/format/${f}.test.ts`),
  ...['local-store', 'open-store', 'upload'].map((f) => `test/store/${f}.test.ts`),
  'test/runtime/local-runtime.test.ts',
  ...[
    'alter',
    'append-commit-hooks',
    'append-model',
    'append-table',
    'input',
    'land-rows',
    'model',
    'overwrite',
    'predicate',
    'record-columns',
    'rescale',
    'routing-reads',
    'schema-model',
    'shared-committer',
    'value-stats-pruning',
    'writer',
  ].map((f) => `test/table/${f}.test.ts`),
];

/** The unit project's include patterns (vitest.config.ts). */
export const UNIT = [...UNIT_DIRS.map((d) => `test/${d}/**/*.test.ts`), ...UNIT_FILES];

/** What a file of the unit project (or a test helper it imports) must not do, and why. */
const UNIT_BREAKERS: ReadonlyArray<{ pattern: RegExp; why: string }> = [
  {
    pattern: /\bvi\.(mock|doMock|spyOn|stubEnv|stubGlobal|useFakeTimers)\b/,
    why: 'mocks, spies, stubs and fake timers patch modules and globals the next file of the fork shares',
  },
  {
    pattern: /process\.env(\.\w+|\[[^\]]+\])\s*(=(?!=)|\?\?=|\|\|=)|delete process\.env/,
    why: 'an environment write outlives the file',
  },
  {
    pattern: /\b(configureDecodePool|configureEncoderPool|decodePool|encoderPool|mergePool)\s*\(/,
    why: 'the worker pools are process-wide: their settings and counts are shared by the fork',
  },
];

/** Every test file of the unit project, relative to the repository root `root`, sorted. */
export function unitFiles(root: string): string[] {
  const inDirs = UNIT_DIRS.flatMap((d) => {
    const dir = path.join('test', d);
    if (!existsSync(path.join(root, dir))) return [];
    return readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.test.ts'))
      .map((f) => path.join(dir, f));
  });
  return [...new Set([...inDirs, ...UNIT_FILES])].sort();
}

/**
 * How `file` (relative to `root`) breaks the rule, as "file: why" lines (empty when it keeps it):
 * in its own text, or in a module of test/ it imports (followed transitively) through a top-level
 * statement or a declaration the importer uses (a helper that sets env only when called counts
 * only for the files that call it).
 */
export function unitRuleBreaks(root: string, file: string): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  const visit = (f: string, caller: string | undefined) => {
    if (seen.has(f) || !existsSync(path.join(root, f))) return;
    seen.add(f);
    const text = readFileSync(path.join(root, f), 'utf8');
    // Top-level declarations and statements start at column 0 (a closing bracket there, as in a
    // signature the formatter broke over lines, continues its declaration).
    for (const chunk of text.split(/^(?=[^\s)\]}])/m)) {
      const name = /^(?:export\s+)?(?:async\s+)?(?:function\*?|const|let|class)\s+(\w+)/.exec(chunk)?.[1];
      if (caller !== undefined && name !== undefined && !new RegExp(`\\b${name}\\b`).test(caller)) continue;
      for (const { pattern, why } of UNIT_BREAKERS) {
        const m = pattern.exec(chunk);
        if (m) out.push(`${f}${name ? ` (${name})` : ''}: ${why} (${m[0]})`);
      }
    }
    for (const m of text.matchAll(/from '(\.{1,2}\/[^']+)\.js'/g)) {
      const target = path.normalize(path.join(path.dirname(f), `${m[1]}.ts`));
      if (target.startsWith(`test${path.sep}`)) visit(target, text);
    }
  };
  visit(file, undefined);
  return out;
}
