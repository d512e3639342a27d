/** The options reference (docs/OPTIONS.md), rendered from the option declaration so it cannot drift. */
import {
  FIELD_OPTIONS,
  FIXED_FIELD_OPTIONS,
  FIXED_OPTIONS,
  TABLE_OPTIONS,
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
