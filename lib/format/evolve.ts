/**
 * Reading a data file written under an older schema through a newer one, by field id (Paimon's
 * SchemaEvolutionUtil): a column whose id the file has is taken from the file under whatever name
 * it had there, cast when its type was widened; a column the file lacks (added later) is all
 * null; a file column the read schema lacks (dropped) is left out. System columns pass through.
 */
import * as arrow from 'apache-arrow';
import { SchemaMismatchError } from '../errors.js';
import { KIND_COLUMN, SEQUENCE_COLUMN, type DataField } from '../schema/types.js';
import { arrowTypesEqual, physicalArrowSchemaOf, toArrowType } from './arrow-schema.js';
import { allocValues, layoutOf, makeColumn, validityOf } from './column-layout.js';

/**
 * `t` (a data file's physical table, columns named as in `fileFields`) in the layout of
 * `readFields`: one column per read field in order, then `_SEQUENCE_NUMBER`, `_VALUE_KIND`.
 */
export function evolveTable(
  t: arrow.Table,
  fileFields: readonly DataField[],
  readFields: readonly DataField[],
): arrow.Table {
  const schema = physicalArrowSchemaOf([...readFields]);
  const names = t.schema.names;
  const byId = new Map(fileFields.map((f) => [f.id, f]));
  const plan = readFields.map((f) => {
    const old = byId.get(f.id);
    if (old === undefined) return { field: f, index: -1 };
    const index = names.indexOf(old.name);
    if (index < 0)
      throw new SchemaMismatchError(
        `data file has no column ${old.name} (field id ${old.id}) although its schema lists it; the file is damaged`,
        old.name,
      );
    return { field: f, index };
  });
  const seq = names.indexOf(SEQUENCE_COLUMN);
  const kind = names.indexOf(KIND_COLUMN);
  if (seq < 0 || kind < 0)
    throw new SchemaMismatchError(`data file lacks ${SEQUENCE_COLUMN} or ${KIND_COLUMN}; it has ${names.join(', ')}`);
  const struct = new arrow.Struct(schema.fields);
  const batches = t.batches.map((b) => {
    const n = b.numRows;
    const children = plan.map(({ field, index }) => {
      const type = toArrowType(field.type);
      return index < 0 ? nullColumn(type, n, field.name) : castColumn(b.data.children[index], type, field.name);
    });
    children.push(b.data.children[seq], b.data.children[kind]);
    return new arrow.RecordBatch(schema, arrow.makeData({ type: struct, length: n, nullCount: 0, children }));
  });
  return new arrow.Table(schema, batches);
}

/** A column of `n` nulls. */
function nullColumn(type: arrow.DataType, n: number, name: string): arrow.Data {
  const layout = layoutOf(type, name);
  const validity = new Uint8Array((n + 7) >> 3);
  return makeColumn(
    type,
    n,
    allocValues(type, layout, n),
    n > 0 ? validity : null,
    n,
    layout.kind === 'var' ? new Int32Array(n + 1) : undefined,
  );
}

/** `d` as `type`: unchanged when the storage is equal, else widened value by value. */
function castColumn(d: arrow.Data, type: arrow.DataType, name: string): arrow.Data {
  if (arrowTypesEqual(d.type, type)) return d;
  const n = d.length;
  // Same bytes, wider declared precision: only the type changes.
  if (
    arrow.DataType.isDecimal(d.type) &&
    arrow.DataType.isDecimal(type) &&
    d.type.scale === type.scale &&
    d.type.bitWidth === type.bitWidth
  ) {
    return d.clone(type);
  }
  const from = d.values as ArrayLike<number | bigint>;
  const validity = validityOf(d);
  const bitmap = validity ? copyBits(validity, d.offset, n) : null;
  if (arrow.DataType.isInt(type) && type.bitWidth === 64 && arrow.DataType.isInt(d.type)) {
    const out = new BigInt64Array(n);
    for (let i = 0; i < n; i++) out[i] = BigInt(from[i] as number);
    return makeColumn(type, n, out, bitmap, d.nullCount);
  }
  if (
    (arrow.DataType.isInt(type) && arrow.DataType.isInt(d.type)) ||
    (arrow.DataType.isFloat(type) && arrow.DataType.isFloat(d.type))
  ) {
    const out = allocValues(type, layoutOf(type, name), n) as unknown as { [i: number]: number };
    for (let i = 0; i < n; i++) out[i] = from[i] as number;
    return makeColumn(type, n, out as unknown as ArrayBufferView, bitmap, d.nullCount);
  }
  throw new SchemaMismatchError(
    `column ${name} is stored as ${String(d.type)} and cannot be read as ${String(type)}; only widenings are supported`,
    name,
  );
}

/** The `n` bits of `bits` starting at bit `offset`, as a fresh bitmap starting at bit 0. */
function copyBits(bits: Uint8Array, offset: number, n: number): Uint8Array {
  const out = new Uint8Array((n + 7) >> 3);
  for (let i = 0; i < n; i++) {
    const j = offset + i;
    if (bits[j >> 3] & (1 << (j & 7))) out[i >> 3] |= 1 << (i & 7);
  }
  return out;
}
