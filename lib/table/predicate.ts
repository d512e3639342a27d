/**
 * Row predicates of filtered reads, counts, deletes and streams: `=  !=  <>  <  <=  >  >=`,
 * `IN (…)`, `NOT IN (…)`, `IS [NOT] NULL`, `AND`, `OR`, `NOT` and parentheses over columns and
 * literals of every column type, with SQL's three-valued logic (a comparison with NULL is
 * unknown, and an unknown row does not match).
 *
 * Two uses: `evalPredicate` on merged rows (a filter is applied only after the merge: filtering
 * the versions of a key before merging could let an older version win), and `mayMatch` on what
 * is known before reading (a partition's values, a file's key range) to skip whole files.
 */
import type * as arrow from 'apache-arrow';
import { InvalidArgumentError } from '../errors.js';
import { tableToRows, takeRows } from '../format/columns.js';
import { compareValues } from '../schema/compare.js';
import { canonicalDecimal } from '../schema/decimal-text.js';
import { coerceText, coerceValue, toDisplayValue } from '../schema/values.js';
import type { DataField, DataType, Row, Value } from '../schema/types.js';

/** A comparison operator. */
export type CompareOp = '=' | '!=' | '<' | '<=' | '>' | '>=';

/** A predicate tree. Literals are values of the column's type (see lib/schema/types.ts). */
export type Predicate =
  | { kind: 'and'; args: Predicate[] }
  | { kind: 'or'; args: Predicate[] }
  | { kind: 'not'; arg: Predicate }
  | { kind: 'compare'; op: CompareOp; column: string; value: Value }
  | { kind: 'in'; column: string; values: Value[]; negated?: boolean }
  | { kind: 'is-null'; column: string; negated?: boolean };

const NEGATED: Record<CompareOp, CompareOp> = { '=': '!=', '!=': '=', '<': '>=', '<=': '>', '>': '<=', '>=': '<' };

type Tok = {
  kind: 'ident' | 'string' | 'number' | 'op' | '(' | ')' | ',' | 'end';
  text: string;
  pos: number;
  quoted?: boolean;
};

function tokenizePredicate(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  const err = (msg: string): never => {
    throw new InvalidArgumentError(`predicate "${src}", position ${i + 1}: ${msg}`);
  };
  while (i < src.length) {
    const c = src[i];
    if (/\s/.test(c)) i++;
    else if (c === '(' || c === ')' || c === ',') out.push({ kind: c, text: c, pos: i++ });
    else if (/[<>!=]/.test(c)) {
      const two = src.slice(i, i + 2);
      const op = ['<=', '>=', '!=', '<>'].includes(two) ? two : c;
      if (op === '!') err('"!" must be followed by "=" (write != or <>)');
      out.push({ kind: 'op', text: op === '<>' ? '!=' : op, pos: i });
      i += op.length;
    } else if (c === "'" || c === '`' || c === '"') {
      const start = i;
      let text = '';
      i++;
      for (;;) {
        const j = src.indexOf(c, i);
        if (j < 0) err(`the quote ${c} opened at position ${start + 1} is never closed`);
        text += src.slice(i, j);
        if (src[j + 1] === c) {
          text += c;
          i = j + 2;
        } else {
          i = j + 1;
          break;
        }
      }
      out.push(c === "'" ? { kind: 'string', text, pos: start } : { kind: 'ident', text, pos: start, quoted: true });
    } else if (/[0-9.+-]/.test(c)) {
      const m = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?/.exec(src.slice(i));
      if (!m) err(`unexpected "${c}"`);
      out.push({ kind: 'number', text: m![0], pos: i });
      i += m![0].length;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_$]*/.exec(src.slice(i))!;
      out.push({ kind: 'ident', text: m[0], pos: i });
      i += m[0].length;
    } else err(`unexpected "${c}"`);
  }
  out.push({ kind: 'end', text: '', pos: src.length });
  return out;
}

/** Nesting (parentheses and NOTs) a predicate may have: far beyond any written by hand, well within the stack. */
const MAX_PREDICATE_DEPTH = 200;

/**
 * Parses predicate text such as `status = 'paid' AND (amount >= 10.5 OR id IN (1, 2)) AND note IS
 * NOT NULL` against `fields`: column names must exist, and each literal must be a valid value of
 * its column's type (strings for DATE, TIMESTAMP, DECIMAL and base64 BYTES, TRUE/FALSE for
 * BOOLEAN). A DECIMAL column compares with any decimal literal, exactly (`d > 1.2345` on
 * DECIMAL(5,2) is `d > 1.23`). Throws InvalidArgumentError naming the position and what was expected.
 */
export function parsePredicate(text: string, fields: readonly DataField[]): Predicate {
  return new PredicateParser(text, fields).parse();
}

/** A recursive-descent parser over the tokens: OR of ANDs of primaries, nesting bounded. */
class PredicateParser {
  private readonly toks: Tok[];
  private at = 0;
  private depth = 0;

  constructor(
    private readonly text: string,
    private readonly fields: readonly DataField[],
  ) {
    this.toks = tokenizePredicate(text);
  }

  parse(): Predicate {
    const p = this.or();
    if (this.peek().kind !== 'end')
      this.err(this.peek(), `unexpected "${this.peek().text}"; combine conditions with AND / OR`);
    return p;
  }

  private peek(): Tok {
    return this.toks[this.at];
  }

  private isWord(t: Tok, w: string): boolean {
    return t.kind === 'ident' && !t.quoted && t.text.toUpperCase() === w;
  }

  private err(t: Tok, msg: string): never {
    throw new InvalidArgumentError(`predicate "${this.text}", position ${t.pos + 1}: ${msg}`);
  }

  private field(t: Tok): DataField {
    const { fields } = this;
    const f =
      fields.find((x) => x.name === t.text) ?? fields.find((x) => x.name.toLowerCase() === t.text.toLowerCase());
    return f ?? this.err(t, `unknown column "${t.text}"; the columns are ${fields.map((x) => x.name).join(', ')}`);
  }

  /** The next token as a literal token for `f`, or a clear error. */
  private literalToken(f: DataField): Tok {
    const t = this.toks[this.at++];
    if (
      t.kind !== 'string' &&
      t.kind !== 'number' &&
      !this.isWord(t, 'TRUE') &&
      !this.isWord(t, 'FALSE') &&
      !this.isWord(t, 'NULL')
    ) {
      this.err(
        t,
        `expected a value for ${f.name}, found ${t.kind === 'end' ? 'the end' : `"${t.text}"`}; write strings, dates and timestamps in single quotes`,
      );
    }
    if (f.type.root === 'STRING' && t.kind !== 'string' && !this.isWord(t, 'NULL'))
      this.err(t, `${f.name} is a STRING: write the value in single quotes, e.g. '${t.text}'`);
    return t;
  }

  private coerce(f: DataField, t: Tok): Value {
    if (this.isWord(t, 'NULL')) return null;
    try {
      return coerceText({ ...f, type: { ...f.type, nullable: true } }, t.text, undefined, {
        quoted: t.kind === 'string',
      });
    } catch (e) {
      return this.err(t, (e as Error).message);
    }
  }

  /** `f op literal`; a DECIMAL literal beyond the column's scale or precision becomes the exact equivalent comparison. */
  private comparison(f: DataField, op: CompareOp): Predicate {
    const t = this.literalToken(f);
    if (f.type.root === 'DECIMAL' && !this.isWord(t, 'NULL')) {
      const exact = decimalComparison(f, op, t.text);
      if (exact) return exact;
    }
    return { kind: 'compare', op, column: f.name, value: this.coerce(f, t) };
  }

  /** `f [NOT] IN (v, …)`, after the IN. A DECIMAL value the column cannot hold equals no row: it is left out. */
  private inList(f: DataField, negated: boolean): Predicate {
    if (this.peek().kind !== '(') this.err(this.peek(), 'expected "(" after IN');
    this.at++;
    const values: Value[] = [];
    for (;;) {
      const t = this.literalToken(f);
      const exact =
        f.type.root === 'DECIMAL' && !this.isWord(t, 'NULL') ? decimalComparison(f, '=', t.text) : undefined;
      if (exact?.kind !== 'in') values.push(exact?.kind === 'compare' ? exact.value : this.coerce(f, t));
      if (this.peek().kind === ',') {
        this.at++;
        continue;
      }
      if (this.peek().kind !== ')') this.err(this.peek(), 'expected "," or ")" in the IN list');
      this.at++;
      return { kind: 'in', column: f.name, values, negated };
    }
  }

  /** A condition on one column, after its name. */
  private condition(f: DataField): Predicate {
    const next = this.peek();
    if (this.isWord(next, 'IS')) {
      this.at++;
      const negated = this.isWord(this.peek(), 'NOT');
      if (negated) this.at++;
      if (!this.isWord(this.peek(), 'NULL')) this.err(this.peek(), 'expected NULL after IS [NOT]');
      this.at++;
      return { kind: 'is-null', column: f.name, negated };
    }
    const notIn = this.isWord(next, 'NOT') && this.isWord(this.toks[this.at + 1], 'IN');
    if (this.isWord(next, 'IN') || notIn) {
      this.at += notIn ? 2 : 1;
      return this.inList(f, notIn);
    }
    if (next.kind !== 'op') return this.err(next, `expected an operator (= != <> < <= > >= IN IS) after ${f.name}`);
    this.at++;
    return this.comparison(f, next.text as CompareOp);
  }

  /** NOT, a parenthesised predicate, or a condition on a column. */
  private primary(): Predicate {
    const t = this.peek();
    if (this.isWord(t, 'NOT') || t.kind === '(') {
      if (++this.depth > MAX_PREDICATE_DEPTH)
        this.err(
          t,
          `nests deeper than ${MAX_PREDICATE_DEPTH} levels of parentheses and NOTs; write it flatter (AND / OR / IN lists need no nesting)`,
        );
      this.at++;
      const p: Predicate = t.kind === '(' ? this.or() : { kind: 'not', arg: this.primary() };
      if (t.kind === '(') {
        if (this.peek().kind !== ')') this.err(this.peek(), 'expected ")"');
        this.at++;
      }
      this.depth--;
      return p;
    }
    if (t.kind !== 'ident')
      return this.err(t, `expected a column name, found ${t.kind === 'end' ? 'the end' : `"${t.text}"`}`);
    this.at++;
    return this.condition(this.field(t));
  }

  private and(): Predicate {
    const args = [this.primary()];
    while (this.isWord(this.peek(), 'AND')) {
      this.at++;
      args.push(this.primary());
    }
    return args.length === 1 ? args[0] : { kind: 'and', args };
  }

  private or(): Predicate {
    const args = [this.and()];
    while (this.isWord(this.peek(), 'OR')) {
      this.at++;
      args.push(this.and());
    }
    return args.length === 1 ? args[0] : { kind: 'or', args };
  }
}

/** Decimals a predicate literal is read to before it is compared with a DECIMAL column (any column has at most 38). */
const LITERAL_SCALE = 76;

/**
 * `column op text` for a DECIMAL column when the literal has more decimals or digits than the
 * column holds, as the exact equivalent over the values the column can hold: with x not a
 * multiple of the column's unit, `d > x` and `d >= x` are `d > floor(x)`, `d < x` and `d <= x` are
 * `d <= floor(x)`, `d = x` holds for no row and `d != x` for every non-null one. Undefined when the
 * literal fits the column (the plain comparison) or is not a decimal number at all.
 */
function decimalComparison(f: DataField, op: CompareOp, text: string): Predicate | undefined {
  const scale = f.type.scale ?? 0;
  const precision = f.type.precision ?? 10;
  if (!('error' in canonicalDecimal(text.trim(), precision, scale))) return undefined;
  const wide = canonicalDecimal(text.trim(), LITERAL_SCALE * 2, LITERAL_SCALE);
  if ('error' in wide) return undefined;
  const unscaled = BigInt(wide.value.replace('.', ''));
  const unit = 10n ** BigInt(LITERAL_SCALE - scale);
  const exact = unscaled % unit === 0n;
  // Floor division (BigInt division truncates toward zero).
  const floor = unscaled / unit - (unscaled < 0n && !exact ? 1n : 0n);
  const max = 10n ** BigInt(precision) - 1n;
  const none: Predicate = { kind: 'in', column: f.name, values: [] };
  const nonNull: Predicate = { kind: 'is-null', column: f.name, negated: true };
  if (floor > max || floor < -max) {
    // Beyond every value the column can hold: above them all, or below them all.
    const above = floor > max;
    if (op === '=') return none;
    if (op === '!=') return nonNull;
    return (op === '>' || op === '>=') === above ? none : nonNull;
  }
  const value = formatUnscaled(floor, scale);
  if (exact) return { kind: 'compare', op, column: f.name, value };
  if (op === '=') return none;
  if (op === '!=') return nonNull;
  return { kind: 'compare', op: op === '>' || op === '>=' ? '>' : '<=', column: f.name, value };
}

/** An unscaled integer as DECIMAL text with `scale` decimals (the canonical value form). */
function formatUnscaled(unscaled: bigint, scale: number): string {
  const digits = (unscaled < 0n ? -unscaled : unscaled).toString().padStart(scale + 1, '0');
  const text = scale > 0 ? `${digits.slice(0, -scale)}.${digits.slice(-scale)}` : digits;
  return unscaled < 0n ? `-${text}` : text;
}

/**
 * A predicate given either as text or as a tree (TypeScript API), checked against `fields`:
 * columns exist, tree literals are coerced to their column's type like JSON input values.
 */
export function toPredicate(where: string | Predicate, fields: readonly DataField[]): Predicate {
  if (typeof where === 'string') return parsePredicate(where, fields);
  const field = (name: string): DataField => {
    const f = fields.find((x) => x.name === name);
    if (!f)
      throw new InvalidArgumentError(
        `predicate names unknown column "${name}"; the columns are ${fields.map((x) => x.name).join(', ')}`,
      );
    return { ...f, type: { ...f.type, nullable: true } };
  };
  const walk = (p: Predicate): Predicate => {
    switch (p.kind) {
      case 'and':
      case 'or':
        return { kind: p.kind, args: p.args.map(walk) };
      case 'not':
        return { kind: 'not', arg: walk(p.arg) };
      case 'compare':
        if (!(p.op in NEGATED)) throw new InvalidArgumentError(`unknown comparison "${p.op}"; use = != < <= > >=`);
        return { ...p, value: coerceValue(field(p.column), p.value) };
      case 'in':
        return { ...p, values: p.values.map((v) => coerceValue(field(p.column), v)) };
      case 'is-null':
        field(p.column);
        return p;
    }
  };
  return walk(where);
}

/** The columns a predicate reads. */
export function predicateColumns(p: Predicate): string[] {
  const out = new Set<string>();
  const walk = (q: Predicate) => {
    if (q.kind === 'and' || q.kind === 'or') q.args.forEach(walk);
    else if (q.kind === 'not') walk(q.arg);
    else out.add(q.column);
  };
  walk(p);
  return [...out];
}

/** True, false or null (unknown) for one row, with SQL's three-valued logic. */
export function evalPredicate(p: Predicate, row: Row, types: ReadonlyMap<string, DataType>): boolean | null {
  switch (p.kind) {
    case 'and': {
      let unknown = false;
      for (const a of p.args) {
        const v = evalPredicate(a, row, types);
        if (v === false) return false;
        if (v === null) unknown = true;
      }
      return unknown ? null : true;
    }
    case 'or': {
      let unknown = false;
      for (const a of p.args) {
        const v = evalPredicate(a, row, types);
        if (v === true) return true;
        if (v === null) unknown = true;
      }
      return unknown ? null : false;
    }
    case 'not': {
      const v = evalPredicate(p.arg, row, types);
      return v === null ? null : !v;
    }
    case 'is-null': {
      const isNull = row[p.column] === null || row[p.column] === undefined;
      return p.negated ? !isNull : isNull;
    }
    case 'compare': {
      const v = row[p.column] ?? null;
      if (v === null || p.value === null) return null;
      return holds(p.op, compareValues(types.get(p.column)!, v, p.value));
    }
    case 'in': {
      const v = row[p.column] ?? null;
      if (v === null) return null;
      const type = types.get(p.column)!;
      let unknown = false;
      for (const x of p.values) {
        if (x === null) unknown = true;
        else if (compareValues(type, v, x) === 0) return !p.negated;
      }
      return unknown ? null : Boolean(p.negated);
    }
  }
}

function holds(op: CompareOp, c: number): boolean {
  switch (op) {
    case '=':
      return c === 0;
    case '!=':
      return c !== 0;
    case '<':
      return c < 0;
    case '<=':
      return c <= 0;
    case '>':
      return c > 0;
    case '>=':
      return c >= 0;
  }
}

/** The rows of `t` (any layout holding the predicate's columns) for which `p` is true, in order. */
export function filterTable(t: arrow.Table, p: Predicate, fields: readonly DataField[]): arrow.Table {
  if (t.numRows === 0) return t;
  const keep = predicateMatches(t, p, fields);
  return keep.length === t.numRows ? t : takeRows(t, keep);
}

/** Indices of the rows of `t` for which `p` is true (not false, not unknown), ascending. */
export function predicateMatches(t: arrow.Table, p: Predicate, fields: readonly DataField[]): Uint32Array {
  if (t.numRows === 0) return new Uint32Array(0);
  const used = predicateColumns(p).map((c) => fields.find((f) => f.name === c)!);
  const types = new Map(used.map((f) => [f.name, f.type]));
  const rows = tableToRows(t.select(used.map((f) => f.name)), used);
  const keep: number[] = [];
  rows.forEach((row, i) => {
    if (evalPredicate(p, row, types) === true) keep.push(i);
  });
  return Uint32Array.from(keep);
}

/** What is known of a column's values in some set of rows before reading them. */
export interface ColumnBounds {
  /** Smallest and largest non-null value; absent when unknown. */
  min?: Value;
  max?: Value;
  /** Whether a null may be among the values, and whether a non-null one may. */
  mayBeNull: boolean;
  mayBeNonNull: boolean;
}

/**
 * False only when no row whose columns lie within `bounds` can satisfy `p` (a column without
 * bounds may hold anything): files or partitions for which it is false are skipped unread.
 */
export function mayMatch(
  p: Predicate,
  bounds: ReadonlyMap<string, ColumnBounds>,
  types: ReadonlyMap<string, DataType>,
): boolean {
  return may(pushNot(p, false), bounds, types);
}

/** `p` (negated when `neg`) with every NOT pushed down to the leaves (De Morgan; NOT of a comparison is its negation under SQL's logic). */
function pushNot(p: Predicate, neg: boolean): Predicate {
  switch (p.kind) {
    case 'and':
    case 'or': {
      const kind = (p.kind === 'and') !== neg ? 'and' : 'or';
      return { kind, args: p.args.map((a) => pushNot(a, neg)) };
    }
    case 'not':
      return pushNot(p.arg, !neg);
    case 'compare':
      return neg ? { ...p, op: NEGATED[p.op] } : p;
    case 'in':
      return neg ? { ...p, negated: !p.negated } : p;
    case 'is-null':
      return neg ? { ...p, negated: !p.negated } : p;
  }
}

function may(p: Predicate, bounds: ReadonlyMap<string, ColumnBounds>, types: ReadonlyMap<string, DataType>): boolean {
  switch (p.kind) {
    case 'and':
      return p.args.every((a) => may(a, bounds, types));
    case 'or':
      return p.args.some((a) => may(a, bounds, types));
    case 'not':
      return true; // pushNot leaves none
    case 'is-null': {
      const b = bounds.get(p.column);
      if (!b) return true;
      return p.negated ? b.mayBeNonNull : b.mayBeNull;
    }
    case 'compare': {
      const b = bounds.get(p.column);
      if (p.value === null) return false; // a comparison with NULL is never true
      if (!b) return true;
      if (!b.mayBeNonNull) return false;
      return rangeMay(p.op, p.value, b, types.get(p.column)!);
    }
    case 'in': {
      const b = bounds.get(p.column);
      if (!b) return true;
      if (!b.mayBeNonNull) return false;
      if (p.negated) {
        // NOT IN is true for a value only when no listed value is NULL and none equals it.
        if (p.values.some((v) => v === null)) return false;
        const type = types.get(p.column)!;
        const single = b.min !== undefined && b.max !== undefined && compareValues(type, b.min, b.max) === 0;
        return !(single && p.values.some((v) => compareValues(type, v, b.min!) === 0));
      }
      return p.values.some((v) => v !== null && rangeMay('=', v, b, types.get(p.column)!));
    }
  }
}

function rangeMay(op: CompareOp, v: Value, b: ColumnBounds, type: DataType): boolean {
  const lo = b.min === undefined ? undefined : compareValues(type, b.min, v);
  const hi = b.max === undefined ? undefined : compareValues(type, b.max, v);
  switch (op) {
    case '=':
      return (lo === undefined || lo <= 0) && (hi === undefined || hi >= 0);
    case '!=':
      return !(lo === 0 && hi === 0);
    case '<':
      return lo === undefined || lo < 0;
    case '<=':
      return lo === undefined || lo <= 0;
    case '>':
      return hi === undefined || hi > 0;
    case '>=':
      return hi === undefined || hi >= 0;
  }
}

/** Predicate text that parsePredicate reads back (values in display form). */
export function formatPredicate(p: Predicate, types: ReadonlyMap<string, DataType>): string {
  const lit = (column: string, v: Value): string => {
    if (v === null) return 'NULL';
    const t = types.get(column);
    const text = t ? String(toDisplayValue(t, v)) : String(v);
    return typeof v === 'string' || t?.root === 'DATE' || t?.root === 'TIMESTAMP' || t?.root === 'BYTES'
      ? `'${text.replaceAll("'", "''")}'`
      : text;
  };
  const col = (c: string) => (/^[A-Za-z_][A-Za-z0-9_$]*$/.test(c) ? c : '`' + c.replaceAll('`', '``') + '`');
  switch (p.kind) {
    case 'and':
    case 'or':
      return p.args
        .map((a) =>
          a.kind === 'and' || a.kind === 'or' ? `(${formatPredicate(a, types)})` : formatPredicate(a, types),
        )
        .join(` ${p.kind.toUpperCase()} `);
    case 'not':
      return `NOT (${formatPredicate(p.arg, types)})`;
    case 'is-null':
      return `${col(p.column)} IS ${p.negated ? 'NOT ' : ''}NULL`;
    case 'compare':
      return `${col(p.column)} ${p.op} ${lit(p.column, p.value)}`;
    case 'in':
      return `${col(p.column)} ${p.negated ? 'NOT ' : ''}IN (${p.values.map((v) => lit(p.column, v)).join(', ')})`;
  }
}
