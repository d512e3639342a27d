/** The options reference (docs/OPTIONS.md), rendered from the option declaration so it cannot drift. */
import {
  COLUMN_FORM_OPTIONS,
  FIELD_OPTIONS,
  FIXED_FIELD_OPTIONS,
  FIXED_OPTIONS,
  TABLE_OPTIONS,
  type ColumnFormOptionDecl,
  type FieldOptionDecl,
  type OptionDecl,
} from './option-catalog.js';

const TYPE_NAMES: Record<OptionDecl['type'], string> = {
  int: 'int',
  long: 'long',
  boolean: 'boolean',
  string: 'string',
  enum: 'enum',
  duration: 'duration',
  memory: 'memory size',
  list: 'list',
};

/** The Markdown of docs/OPTIONS.md (scripts/gen-options-doc.ts writes it; a test checks it is current). */
export function renderOptionsMarkdown(): string {
  const lines = [
    '# Table options',
    '',
    '<!-- Generated from lib/schema/option-catalog.ts by `npx tsx scripts/gen-options-doc.ts`; do not edit by hand. -->',
    '',
    'Options are set when a table is created (`varve create … -o bucket=4 -o merge-engine=aggregation`) and',
    'stored, as text, in its schema. Names and defaults follow Apache Paimon where the concept is the same.',
    'An unknown option or a value of the wrong type is refused with the closest valid names or values.',
    'Options change later with `varve alter <table> --set key=value` / `--reset key` (a new schema version),',
    'except those marked **Fixed at creation**, which would change what the stored data means.',
    '',
    'Value formats:',
    '',
    '- **duration**: a whole number with a unit: `500 ms`, `10 s`, `30 min`, `1 h`, `2 hours`, `1 d`; a plain number is milliseconds.',
    '- **memory size**: a whole number with a unit, powers of 1024: `512 kb`, `64 mb`, `1 gb`; a plain number is bytes.',
    '- **list**: comma-separated, spaces around items ignored: `a,b`.',
    '- **boolean**: `true` or `false`; **enum**: one of the listed values.',
    '',
    '| Option | Type | Default | Description |',
    '|---|---|---|---|',
    ...TABLE_OPTIONS.map(tableRow),
    '',
    '## Per-column options',
    '',
    'These options exist once per column; `<col>` is a column name (for `sequence-group`, a comma-separated list).',
    'They apply to the aggregation and partial-update merge engines and must name columns of the table.',
    '',
    '| Option | Type | Default | Description |',
    '|---|---|---|---|',
    ...FIELD_OPTIONS.map(fieldRow),
    '',
    '## Parquet writer options',
    '',
    'Paimon passes its `parquet.*` table options to its Parquet writer (parquet-mr); varve takes the same keys and',
    'applies those its Parquet encoder (parquet-wasm) can honour to every data and changelog file it writes from then',
    'on: writes, compactions, changelogs and rescales. Files already written keep their encoding and stay readable,',
    'so `varve alter <table> --set parquet.dictionary.page.size=64kb` takes effect as files are written or compacted.',
    'Other `parquet.*` keys are refused with the reason (the codec is `file.compression`; parquet-wasm writes no bloom',
    "filters; row groups are cut by row count). The table-wide options are in the first table; parquet-mr's per-column",
    'form `<key>#<col>`, for a column of the table:',
    '',
    '| Option | Type | Default | Description |',
    '|---|---|---|---|',
    ...COLUMN_FORM_OPTIONS.map(columnFormRow),
    '',
  ];
  return lines.join('\n');
}

function tableRow(d: OptionDecl): string {
  const def = d.default === undefined ? '(none)' : typeof d.default === 'string' ? code(d.default) : d.default.text;
  return row(`\`${d.key}\``, typeText(d), def, fixedNote(d.description, FIXED_OPTIONS[d.key]));
}

function fieldRow(d: FieldOptionDecl): string {
  return row(
    `\`${d.pattern}\``,
    typeText(d),
    d.default === undefined ? '(none)' : code(d.default),
    fixedNote(d.description, FIXED_FIELD_OPTIONS[d.suffix]),
  );
}

function columnFormRow(d: ColumnFormOptionDecl): string {
  return row(`\`${d.pattern}\``, typeText(d), `\`${d.key}\``, d.description);
}

function typeText(d: { type: OptionDecl['type']; allowed?: readonly string[]; min?: number; max?: number }): string {
  let t = TYPE_NAMES[d.type];
  if (d.allowed) t += `: ${d.allowed.map(code).join(', ')}`;
  if (d.min !== undefined && (d.type === 'int' || d.type === 'long'))
    t += d.max === undefined ? ` (≥ ${d.min})` : ` (${d.min}..${d.max})`;
  return t;
}

function code(s: string): string {
  return `\`${s}\``;
}

function row(...cells: string[]): string {
  // A pipe inside a cell would end it early.
  return `| ${cells.map((c) => c.replaceAll('|', '\\|')).join(' | ')} |`;
}

function fixedNote(description: string, reason: string | undefined): string {
  return reason === undefined ? description : `${description} **Fixed at creation**: ${reason}.`;
}
