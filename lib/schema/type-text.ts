/**
 * Column types as text: the grammar shared by the schema text, the JSON schema form and the
 * schema files (`BIGINT NOT NULL`, `DECIMAL(10,2)`, `TIMESTAMP(3)`), and its printer.
 */
import { SchemaError } from '../errors.js';
import { describeToken, tokenize, type Token } from './sql-lexer.js';
import type { DataType, TypeRoot } from './types.js';

/** Every type name the grammar accepts, with what it means; listed in "unknown type" errors. */
const TYPE_NAMES: Readonly<Record<string, TypeRoot>> = {
  BOOLEAN: 'BOOLEAN',
  BOOL: 'BOOLEAN',
  TINYINT: 'TINYINT',
  SMALLINT: 'SMALLINT',
  INT: 'INT',
  INTEGER: 'INT',
  BIGINT: 'BIGINT',
  FLOAT: 'FLOAT',
  REAL: 'FLOAT',
  DOUBLE: 'DOUBLE',
  DECIMAL: 'DECIMAL',
  NUMERIC: 'DECIMAL',
  STRING: 'STRING',
  VARCHAR: 'STRING',
  CHAR: 'STRING',
  TEXT: 'STRING',
  BYTES: 'BYTES',
  BINARY: 'BYTES',
  VARBINARY: 'BYTES',
  BYTEA: 'BYTES',
  DATE: 'DATE',
  TIMESTAMP: 'TIMESTAMP',
};

/** The type names as a user would write them, for error messages. */
const KNOWN_TYPES_TEXT =
  'BOOLEAN (BOOL), TINYINT, SMALLINT, INT (INTEGER), BIGINT, FLOAT (REAL), DOUBLE (DOUBLE PRECISION), ' +
  'DECIMAL(p,s) (NUMERIC), STRING (VARCHAR, VARCHAR(n), CHAR(n), TEXT), BYTES (BINARY, VARBINARY, BYTEA), ' +
  'DATE, TIMESTAMP, TIMESTAMP(3), TIMESTAMP(6)';

/** Names that take a length which varve ignores (strings and bytes are unbounded). */
const LENGTH_TYPES = new Set(['VARCHAR', 'CHAR', 'BINARY', 'VARBINARY']);
/** Precisions TIMESTAMP may have: milliseconds or microseconds, the units of its bigint value. */
const TIMESTAMP_PRECISIONS = [3, 6] as const;
/** DECIMAL alone means DECIMAL(10,0), as in Paimon and Flink. */
const DEFAULT_DECIMAL = { precision: 10, scale: 0 };
/** TIMESTAMP alone means TIMESTAMP(6), as in Paimon and Flink. */
const DEFAULT_TIMESTAMP_PRECISION = 6;
/** The largest DECIMAL precision (128-bit storage). */
const MAX_DECIMAL_PRECISION = 38;

/** A position in a token list, with the context errors are reported in. */
export class TokenCursor {
  i = 0;
  /** The column being parsed, named in errors. */
  column?: string;
  constructor(
    readonly tokens: Token[],
    readonly what: string,
  ) {}

  peek(ahead = 0): Token {
    return this.tokens[Math.min(this.i + ahead, this.tokens.length - 1)];
  }

  next(): Token {
    const t = this.peek();
    if (t.kind !== 'end') this.i++;
    return t;
  }

  /** True (and consumes it) when the next token is the keyword `word`, case-insensitively. */
  acceptWord(word: string): boolean {
    const t = this.peek();
    if (t.kind === 'word' && t.text.toUpperCase() === word) {
      this.i++;
      return true;
    }
    return false;
  }

  /** A SchemaError that says where (position, column) and what went wrong. */
  error(at: Token, message: string): SchemaError {
    const where = `position ${at.pos + 1}${this.column !== undefined ? ` (column "${this.column}")` : ''}`;
    return new SchemaError(`${this.what}, ${where}: ${message}`, this.column);
  }

  expect(kind: Token['kind'], hint: string): Token {
    const t = this.peek();
    if (t.kind !== kind) throw this.error(t, `expected ${hint}, found ${describeToken(t)}`);
    return this.next();
  }
}

/** Parses a type (name and parameters, no nullability) at the cursor. */
export function parseTypeAt(c: TokenCursor): DataType {
  const t = c.peek();
  if (t.kind !== 'word')
    throw c.error(t, `expected a type, found ${describeToken(t)}; known types: ${KNOWN_TYPES_TEXT}`);
  c.next();
  const name = t.text.toUpperCase();
  const root = TYPE_NAMES[name];
  if (root === undefined) {
    throw c.error(t, `unknown type ${t.text}; known types: ${KNOWN_TYPES_TEXT}`);
  }
  if (name === 'DOUBLE') c.acceptWord('PRECISION');
  const params = parseParams(c);
  const type: DataType = { root, nullable: true };
  if (root === 'DECIMAL') {
    const [p, s] = params
      ? [params.values[0], params.values[1] ?? 0]
      : [DEFAULT_DECIMAL.precision, DEFAULT_DECIMAL.scale];
    if (params && params.values.length > 2)
      throw c.error(params.at, `${name} takes (precision, scale), e.g. DECIMAL(10,2)`);
    if (p < 1 || p > MAX_DECIMAL_PRECISION) {
      throw c.error(params!.at, `DECIMAL precision ${p} is out of range; use 1 to ${MAX_DECIMAL_PRECISION}`);
    }
    if (s > p)
      throw c.error(params!.at, `DECIMAL(${p},${s}) has a scale larger than its precision; use a scale from 0 to ${p}`);
    type.precision = p;
    type.scale = s;
  } else if (root === 'TIMESTAMP') {
    if (params && params.values.length !== 1)
      throw c.error(params.at, 'TIMESTAMP takes one precision, e.g. TIMESTAMP(3)');
    const p = params ? params.values[0] : DEFAULT_TIMESTAMP_PRECISION;
    if (!(TIMESTAMP_PRECISIONS as readonly number[]).includes(p)) {
      throw c.error(
        params!.at,
        `TIMESTAMP(${p}) is not supported; use TIMESTAMP(3) (milliseconds) or TIMESTAMP(6) (microseconds, the default)`,
      );
    }
    type.precision = p;
  } else if (params) {
    if (!LENGTH_TYPES.has(name)) throw c.error(params.at, `${name} takes no parameters; write just ${name}`);
    if (params.values.length !== 1 || params.values[0] < 1) {
      throw c.error(params.at, `${name} takes one positive length, e.g. ${name}(255)`);
    }
  }
  return type;
}

/** `( n [, n …] )` when present; undefined otherwise. */
function parseParams(c: TokenCursor): { values: number[]; at: Token } | undefined {
  if (c.peek().kind !== '(') return undefined;
  const at = c.next();
  const values: number[] = [];
  for (;;) {
    const n = c.expect('number', 'a number inside the parentheses');
    values.push(Number(n.text));
    if (c.peek().kind === ',') {
      c.next();
      continue;
    }
    c.expect(')', 'a closing parenthesis');
    return { values, at };
  }
}

/** Parses `NOT NULL` / `NULL` / `COMMENT '…'` in any order; returns the nullability and comment found. */
export function parseConstraintsAt(c: TokenCursor): { nullable?: boolean; comment?: string } {
  const out: { nullable?: boolean; comment?: string } = {};
  for (;;) {
    const t = c.peek();
    if (c.acceptWord('NOT')) {
      const n = c.peek();
      if (!c.acceptWord('NULL')) throw c.error(n, `expected NULL after NOT, found ${describeToken(n)}`);
      setNullable(c, t, out, false);
    } else if (c.acceptWord('NULL')) {
      setNullable(c, t, out, true);
    } else if (c.acceptWord('COMMENT')) {
      if (out.comment !== undefined) throw c.error(t, 'COMMENT is given twice; keep one');
      out.comment = c.expect('string', "a comment in single quotes, e.g. COMMENT 'order total'").text;
    } else {
      return out;
    }
  }
}

function setNullable(c: TokenCursor, at: Token, out: { nullable?: boolean }, value: boolean): void {
  if (out.nullable !== undefined && out.nullable !== value)
    throw c.error(at, 'the column is declared both NULL and NOT NULL; keep one');
  out.nullable = value;
}

/** Parses a whole type string such as `DECIMAL(10,2) NOT NULL COMMENT 'x'`. */
export function parseTypeText(text: string, what: string, column?: string): { type: DataType; comment?: string } {
  const c = new TokenCursor(tokenize(text, what), what);
  c.column = column;
  const type = parseTypeAt(c);
  const { nullable, comment } = parseConstraintsAt(c);
  const rest = c.peek();
  if (rest.kind !== 'end')
    throw c.error(rest, `unexpected ${describeToken(rest)} after the type; write a type like "DECIMAL(10,2) NOT NULL"`);
  if (nullable === false) type.nullable = false;
  return comment === undefined ? { type } : { type, comment };
}

/** The text of a type, e.g. `DECIMAL(10,2) NOT NULL` or `TIMESTAMP(3)`; parseTypeText reads it back. */
export function formatType(t: DataType): string {
  let s: string = t.root;
  if (t.root === 'DECIMAL')
    s = `DECIMAL(${t.precision ?? DEFAULT_DECIMAL.precision},${t.scale ?? DEFAULT_DECIMAL.scale})`;
  else if (t.root === 'TIMESTAMP') s = `TIMESTAMP(${t.precision ?? DEFAULT_TIMESTAMP_PRECISION})`;
  return t.nullable ? s : `${s} NOT NULL`;
}
