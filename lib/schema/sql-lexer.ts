/**
 * Tokens of the SQL-like column syntax (`order_id BIGINT NOT NULL COMMENT 'x', …`): words,
 * quoted identifiers (backticks or double quotes, the quote doubled to escape it), single-quoted
 * strings ('' escapes a quote), unsigned integers and the punctuation `(` `)` `,`; any other
 * character is a token of its own, reported by the parser in context.
 */
import { SchemaError } from '../errors.js';

/** What a token is: a word, a quoted identifier, a string, a number, punctuation, another character, or the end. */
export type TokenKind = 'word' | 'quoted' | 'string' | 'number' | '(' | ')' | ',' | 'other' | 'end';

/** One token and where it starts. */
export interface Token {
  kind: TokenKind;
  /** The word as written, the unescaped identifier or string, the digits, or the punctuation. */
  text: string;
  /** 0-based offset of the token's first character in the source text. */
  pos: number;
}

const WORD_START = /[A-Za-z_]/;
const WORD_PART = /[A-Za-z0-9_$]/;

/** Splits `source` into tokens; the last one is always `end`. Throws SchemaError on an unclosed quote. */
export function tokenize(source: string, what: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '(' || c === ')' || c === ',') {
      out.push({ kind: c, text: c, pos: i });
      i++;
    } else if (WORD_START.test(c)) {
      const start = i;
      while (i < source.length && WORD_PART.test(source[i])) i++;
      out.push({ kind: 'word', text: source.slice(start, i), pos: start });
    } else if (c >= '0' && c <= '9') {
      const start = i;
      while (i < source.length && source[i] >= '0' && source[i] <= '9') i++;
      out.push({ kind: 'number', text: source.slice(start, i), pos: start });
    } else if (c === '`' || c === '"' || c === "'") {
      const { text, end } = readQuoted(source, i, what);
      out.push({ kind: c === "'" ? 'string' : 'quoted', text, pos: i });
      i = end;
    } else {
      // Left to the parser, which knows what it expected here (e.g. "unknown type ARRAY" before "<").
      out.push({ kind: 'other', text: c, pos: i });
      i++;
    }
  }
  out.push({ kind: 'end', text: '', pos: source.length });
  return out;
}

/** Reads a quoted run starting at `start` (the opening quote); a doubled quote stands for one. */
function readQuoted(source: string, start: number, what: string): { text: string; end: number } {
  const q = source[start];
  let text = '';
  let i = start + 1;
  for (;;) {
    const j = source.indexOf(q, i);
    if (j < 0) {
      throw new SchemaError(
        `${what}: the quote ${q} opened at position ${start + 1} is never closed; close it with ${q}`,
      );
    }
    text += source.slice(i, j);
    if (source[j + 1] === q) {
      text += q;
      i = j + 2;
    } else {
      return { text, end: j + 1 };
    }
  }
}

/** A short description of a token for error messages: `"NOT"`, `","` or `the end of the text`. */
export function describeToken(t: Token): string {
  if (t.kind === 'end') return 'the end of the text';
  if (t.kind === 'string') return `'${t.text}'`;
  if (t.kind === 'quoted') return `\`${t.text}\``;
  return `"${t.text}"`;
}
