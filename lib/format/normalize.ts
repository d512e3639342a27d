/**
 * Brings a table read from Parquet to the Arrow types varve declares (toArrowType), so callers see
 * the same types whatever wrote the file: zoned timestamps lose the zone (the values already are
 * UTC instants), Date64 becomes DateDay, LargeUtf8/LargeBinary get 32-bit offsets. Files varve
 * writes already round-trip exactly, so for them this only checks.
 */
import * as arrow from 'apache-arrow';
import { InvalidArgumentError } from '../errors.js';
import { fromArrowType } from './arrow-schema.js';
import { layoutOf, makeColumn, MAX_VAR_BYTES, validityOf } from './column-layout.js';

const MS_PER_DAY = 86_400_000;

/** The table with every column in its declared varve Arrow type; SchemaMismatchError for a type varve cannot store. */
export function normalizeArrowTypes(table: arrow.Table): arrow.Table {
  const fields = table.schema.fields;
  const converters = fields.map((f) => converterFor(f.type));
  if (converters.every((c) => c === null)) {
    fields.forEach(checkSupported);
    return table;
  }
  const newFields = fields.map((f, c) => {
    const conv = converters[c];
    return conv === null ? f : new arrow.Field(f.name, conv.type, f.nullable, f.metadata);
  });
  newFields.forEach(checkSupported);
  const schema = new arrow.Schema(newFields, table.schema.metadata);
  const struct = new arrow.Struct(newFields);
  const batches = table.batches.map((b) => {
    const children = b.data.children.map((d, c) => {
      const conv = converters[c];
      return conv === null ? d : conv.convert(d, fields[c].name);
    });
    return new arrow.RecordBatch(schema, arrow.makeData({ type: struct, length: b.numRows, nullCount: 0, children }));
  });
  return new arrow.Table(schema, batches);
}

function checkSupported(f: arrow.Field): void {
  fromArrowType(f.type, f.nullable, f.name);
  layoutOf(f.type, f.name);
}

type Converter = { type: arrow.DataType; convert: (d: arrow.Data, column: string) => arrow.Data };

function converterFor(t: arrow.DataType): Converter | null {
  if (arrow.DataType.isTimestamp(t) && t.timezone) {
    const type = new arrow.Timestamp(t.unit);
    // Same values, same buffers: only the type changes.
    return { type, convert: (d) => d.clone(type) };
  }
  if (arrow.DataType.isDate(t) && t.unit === arrow.DateUnit.MILLISECOND) {
    const type = new arrow.DateDay();
    return { type, convert: (d) => dateMillisToDays(d, type) };
  }
  if (arrow.DataType.isLargeUtf8(t)) {
    const type = new arrow.Utf8();
    return { type, convert: (d, column) => narrowOffsets(d, type, column) };
  }
  if (arrow.DataType.isLargeBinary(t)) {
    const type = new arrow.Binary();
    return { type, convert: (d, column) => narrowOffsets(d, type, column) };
  }
  return null;
}

function dateMillisToDays(d: arrow.Data, type: arrow.DataType): arrow.Data {
  const ms = d.values as BigInt64Array;
  const days = new Int32Array(d.length);
  for (let i = 0; i < d.length; i++) days[i] = Math.floor(Number(ms[i]) / MS_PER_DAY);
  return makeColumn(type, d.length, days, sliceBits(d), d.nullCount);
}

function narrowOffsets(d: arrow.Data, type: arrow.DataType, column: string): arrow.Data {
  const wide = d.valueOffsets as unknown as BigInt64Array;
  const start = Number(wide[0]);
  if (Number(wide[d.length]) - start > MAX_VAR_BYTES) {
    throw new InvalidArgumentError(
      `column ${column}: more than 2 GiB of data in one batch; read the file with a smaller batch size`,
    );
  }
  const offsets = new Int32Array(d.length + 1);
  for (let i = 0; i <= d.length; i++) offsets[i] = Number(wide[i]) - start;
  const bytes = (d.values as Uint8Array).subarray(start, Number(wide[d.length]));
  return makeColumn(type, d.length, bytes, sliceBits(d), d.nullCount, offsets);
}

/** The validity bitmap of `d` re-based to bit 0 (new Data start at offset 0), or null without nulls. */
function sliceBits(d: arrow.Data): Uint8Array | null {
  const bm = validityOf(d);
  if (bm === null) return null;
  const out = new Uint8Array((d.length + 7) >> 3);
  for (let i = 0; i < d.length; i++) {
    const p = d.offset + i;
    if ((bm[p >> 3] >> (p & 7)) & 1) out[i >> 3] |= 1 << (i & 7);
  }
  return out;
}
