/**
 * Builds one Arrow column value by value, straight into typed arrays (the value's bytes for
 * STRING/BYTES, a bit for BOOLEAN and validity): what a parser uses to turn records into columns
 * without keeping a row object or a JS value per record. The values are the validated JS values
 * of lib/schema/types.ts; the column equals `columnFromRows` of the same values.
 */
import type * as arrow from 'apache-arrow';
import { SchemaMismatchError } from '../errors.js';
import type { DataField, Value } from '../schema/types.js';
import { toArrowType } from './arrow-schema.js';
import { makeColumn } from './column-layout.js';
import { writeDecimal } from './decimal.js';

const encoder = new TextEncoder();

type Fixed = Int8Array | Int16Array | Int32Array | BigInt64Array | Float32Array | Float64Array | Uint32Array;

/** Appends validated values of one field and hands them out as Arrow columns, one per `finish`. */
export class ColumnAppender {
  readonly type: arrow.DataType;
  private readonly root: DataField['type']['root'];
  private capacity = 0;
  private length = 0;
  private nulls = 0;
  private validity = new Uint8Array(0);
  /** Fixed-width values (DECIMAL: 4 words per row), or bits for BOOLEAN. */
  private fixed: Fixed | Uint8Array = new Uint8Array(0);
  /** STRING/BYTES: offsets and value bytes. */
  private offsets = new Int32Array(1);
  private bytes = new Uint8Array(0);
  private pos = 0;
  /** DECIMAL: `fixed` as the signed words writeDecimal fills. */
  private words: Int32Array = new Int32Array(0);

  constructor(
    readonly field: DataField,
    initialRows = 1024,
  ) {
    this.type = toArrowType(field.type);
    this.root = field.type.root;
    this.alloc(Math.max(8, initialRows));
  }

  /** Rows appended since the last `finish`. */
  get rows(): number {
    return this.length;
  }

  /**
   * Appends `v` (null = NULL). The value must already be validated for the field's type (as
   * coerceValue/coerceText return it); a NULL in a NOT NULL column is refused.
   */
  append(v: Value): void {
    if (this.length === this.capacity) this.grow(this.capacity * 2);
    const i = this.length++;
    if (v === null) {
      if (!this.field.type.nullable)
        throw new SchemaMismatchError(
          `column ${this.field.name}, row ${i}: expected a value: ${this.field.name} is NOT NULL, got null`,
          this.field.name,
        );
      this.nulls++;
      if (this.root === 'STRING' || this.root === 'BYTES') this.offsets[i + 1] = this.pos;
      return;
    }
    this.validity[i >> 3] |= 1 << (i & 7);
    switch (this.root) {
      case 'BOOLEAN':
        if (v === true) (this.fixed as Uint8Array)[i >> 3] |= 1 << (i & 7);
        return;
      case 'BIGINT':
      case 'TIMESTAMP':
        (this.fixed as BigInt64Array)[i] = v as bigint;
        return;
      case 'DECIMAL': {
        const t = this.field.type;
        writeDecimal(String(v), t.precision ?? 10, t.scale ?? 0, this.words, i * 4, this.field.name);
        return;
      }
      case 'STRING':
        this.appendString(i, v as string);
        return;
      case 'BYTES': {
        const b = v as Uint8Array;
        this.reserveBytes(b.length);
        this.bytes.set(b, this.pos);
        this.pos += b.length;
        this.offsets[i + 1] = this.pos;
        return;
      }
      default:
        (this.fixed as Int32Array | Float64Array)[i] = v as number;
    }
  }

  /** The column of the rows appended since the last `finish` (its own copy); the arrays are reused. */
  finish(): arrow.Data {
    const n = this.length;
    const validity = this.validity.slice(0, (n + 7) >> 3);
    let data: arrow.Data;
    if (this.root === 'STRING' || this.root === 'BYTES') {
      data = makeColumn(
        this.type,
        n,
        this.bytes.slice(0, this.pos),
        validity,
        this.nulls,
        this.offsets.slice(0, n + 1),
      );
    } else if (this.root === 'BOOLEAN') {
      data = makeColumn(this.type, n, (this.fixed as Uint8Array).slice(0, (n + 7) >> 3), validity, this.nulls);
    } else {
      data = makeColumn(this.type, n, this.fixed.slice(0, this.root === 'DECIMAL' ? n * 4 : n), validity, this.nulls);
    }
    this.length = 0;
    this.nulls = 0;
    this.pos = 0;
    this.validity.fill(0);
    if (this.root === 'BOOLEAN') (this.fixed as Uint8Array).fill(0);
    return data;
  }

  private alloc(capacity: number): void {
    this.capacity = capacity;
    this.validity = new Uint8Array((capacity + 7) >> 3);
    switch (this.root) {
      case 'BOOLEAN':
        this.fixed = new Uint8Array((capacity + 7) >> 3);
        break;
      case 'STRING':
      case 'BYTES':
        this.offsets = new Int32Array(capacity + 1);
        if (this.bytes.length === 0) this.bytes = new Uint8Array(capacity * 16);
        break;
      case 'DECIMAL':
        this.fixed = new Uint32Array(capacity * 4);
        this.words = new Int32Array(this.fixed.buffer);
        break;
      default:
        this.fixed = new (this.type.ArrayType as unknown as new (n: number) => Fixed)(capacity);
    }
  }

  private grow(capacity: number): void {
    const validity = this.validity;
    const fixed = this.fixed;
    const offsets = this.offsets;
    this.alloc(capacity);
    this.validity.set(validity);
    if (this.root === 'STRING' || this.root === 'BYTES') this.offsets.set(offsets);
    else (this.fixed as Uint8Array).set(fixed as Uint8Array);
  }

  private reserveBytes(extra: number): void {
    if (this.pos + extra <= this.bytes.length) return;
    const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.pos + extra));
    grown.set(this.bytes.subarray(0, this.pos));
    this.bytes = grown;
  }

  /** UTF-8: ASCII byte by byte, anything else through encodeInto. */
  private appendString(i: number, s: string): void {
    const len = s.length;
    // A UTF-16 code unit never takes more than 3 UTF-8 bytes.
    this.reserveBytes(len * 3);
    const bytes = this.bytes;
    const pos = this.pos;
    let j = 0;
    for (; j < len; j++) {
      const c = s.charCodeAt(j);
      if (c >= 0x80) break;
      bytes[pos + j] = c;
    }
    this.pos += j === len ? len : encoder.encodeInto(s, bytes.subarray(pos)).written;
    this.offsets[i + 1] = this.pos;
  }
}
