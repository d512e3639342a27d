/**
 * Arrow batches copied out of parquet-wasm's memory through the Arrow C Data Interface
 * (`RecordBatch.toFFI()`), instead of an IPC stream: no IPC buffer is built inside wasm, no
 * second copy into JS, no flatbuffer parse. A `BatchMemory` hands out where the buffers go: a
 * fresh ArrayBuffer per buffer (the batch owns its memory), or ONE region per batch in a slab
 * reused batch after batch (`ReusedBatchMemory`: no allocation, no garbage, but a batch is only
 * valid until its slab comes round again).
 *
 * Only flat columns are imported this way (what varve's data files hold: null, bool, integers,
 * floats, decimal128, dates, times, timestamps, utf8, binary); for anything else — nested,
 * dictionary-encoded, 64-bit offsets, an unknown null count — `importWasmBatch` answers undefined
 * and the caller falls back to IPC. arrow-js-ffi does this job in general, but it allocates one
 * ArrayBuffer per buffer, reads bitmaps and values from the wrong place for a non-zero offset
 * and misreads the schema flags (it tests bits from the most significant end), hence this file.
 */
import * as arrow from 'apache-arrow';

/**
 * Where the buffers of one decoded batch go: `take` is called once per batch with its total size
 * (one region), or, with `perBuffer`, once per buffer (validity, values, offsets of each column).
 */
export interface BatchMemory {
  take(bytes: number): Uint8Array;
  readonly perBuffer?: boolean;
}

/**
 * Every buffer of a batch in an ArrayBuffer of its own: what a caller that keeps batches needs.
 * Per buffer rather than one region per batch because dropped batches wait for V8 to free them:
 * a 10M-row scan with one 2 MB region per batch peaked at 57-66 MB of ArrayBuffers, with buffers
 * of a column each (≤ 1 MB) at 38-41 MB (Node 20; docs/BENCHMARKS.md, streamed read).
 */
export const freshBatchMemory: BatchMemory = { perBuffer: true, take: (bytes) => new Uint8Array(bytes) };

/**
 * Slabs reused in turn: batch n goes into slab n mod `slabs`, which grows (is replaced) only when a
 * batch needs more. A batch stays valid until `slabs` more batches have been taken from the same
 * memory; with the default 2 a consumer may still hold the batch before the one it just got (the
 * k-way merge joins a held-back row to the next batch).
 */
export class ReusedBatchMemory implements BatchMemory {
  private readonly ring: Uint8Array[];
  private turn = 0;

  constructor(readonly slabs = 2) {
    this.ring = Array.from({ length: slabs }, () => new Uint8Array(0));
  }

  take(bytes: number): Uint8Array {
    const i = this.turn;
    this.turn = (i + 1) % this.slabs;
    if (this.ring[i].length < bytes) this.ring[i] = new Uint8Array(grownSize(bytes));
    return this.ring[i].subarray(0, bytes);
  }

  /** Whether `buffer` is one of this memory's slabs (a batch built on it is not the caller's to keep). */
  owns(buffer: ArrayBufferLike): boolean {
    return this.ring.some((s) => s.buffer === buffer);
  }
}

/**
 * Bytes of released regions a thread keeps for the next PooledBatchMemory (beyond: left to the
 * GC). Measured on the 1M-key spread merge-read (docs/BENCHMARKS.md §2: 4 sections merged at
 * once, some 140 MB of decoded row groups at the peak), one thread, process CPU, medians of 6-8
 * against no pool in the same process: 32 MiB kept 2 % less, 64 MiB 12 %, 128 MiB 21-25 %.
 */
const POOLED_FREE_BYTES = 128 * 1024 * 1024;
/** Kept regions are dropped when no memory has given any back for this long (a process between reads holds none). */
const POOLED_IDLE_MS = 2000;
/** A free region serves a batch of at least this share of its size (a small batch does not pin a large region). */
const POOLED_MIN_SHARE = 4;
/** This thread's regions given back by released PooledBatchMemory, for later ones. */
const pooledFree: Uint8Array[] = [];
let pooledFreeBytes = 0;
let pooledDrop: ReturnType<typeof setTimeout> | undefined;

/**
 * One region per batch, taken from the regions earlier memories of this thread gave back (else a
 * new one), for a task that decodes many batches it drops when it is done (a merged read's
 * section): a decode then copies into memory already mapped instead of fresh pages, and the
 * ArrayBuffers it would allocate do not drive the GC. `release(result)` gives back every region
 * the result does not hold a buffer of (those stay the result's); call it only when nothing else
 * still reads a batch taken here. A memory never released just leaves its regions to the GC. The
 * thread keeps at most POOLED_FREE_BYTES of regions, and none once it has been idle POOLED_IDLE_MS.
 */
export class PooledBatchMemory implements BatchMemory {
  private readonly taken = new Map<ArrayBufferLike, Uint8Array>();
  private released = false;

  take(bytes: number): Uint8Array {
    const region = (this.released ? undefined : takeFree(bytes)) ?? new Uint8Array(grownSize(bytes));
    if (!this.released) this.taken.set(region.buffer, region);
    return region.subarray(0, bytes);
  }

  /** Gives back every region no buffer of `keep` lies in; later batches get fresh memory. */
  release(keep: arrow.Table): void {
    if (this.released) return;
    this.released = true;
    const held = new Set<ArrayBufferLike>();
    for (const b of keep.batches) collectBuffers(b.data, held);
    for (const [buffer, region] of this.taken) {
      if (held.has(buffer) || pooledFreeBytes + region.length > POOLED_FREE_BYTES) continue;
      pooledFree.push(region);
      pooledFreeBytes += region.length;
    }
    this.taken.clear();
    if (pooledDrop !== undefined) clearTimeout(pooledDrop);
    pooledDrop = setTimeout(dropFree, POOLED_IDLE_MS);
    pooledDrop.unref?.();
  }
}

function dropFree(): void {
  pooledFree.length = 0;
  pooledFreeBytes = 0;
  pooledDrop = undefined;
}

/** The smallest free region of at least `bytes` (and at most POOLED_MIN_SHARE times that), taken off the list. */
function takeFree(bytes: number): Uint8Array | undefined {
  let best = -1;
  for (let i = 0; i < pooledFree.length; i++) {
    const n = pooledFree[i].length;
    if (n >= bytes && n <= bytes * POOLED_MIN_SHARE && (best < 0 || n < pooledFree[best].length)) best = i;
  }
  if (best < 0) return undefined;
  const region = pooledFree[best];
  pooledFree[best] = pooledFree[pooledFree.length - 1];
  pooledFree.pop();
  pooledFreeBytes -= region.length;
  return region;
}

/** The ArrayBuffers under every buffer of `data` and its children. */
function collectBuffers(data: arrow.Data, into: Set<ArrayBufferLike>): void {
  for (const b of [data.values, data.valueOffsets, data.nullBitmap, data.typeIds] as (ArrayBufferView | undefined)[])
    if (b) into.add(b.buffer);
  for (const c of data.children) collectBuffers(c, into);
}

/** A slab is rounded up to 1/8 more than asked, to 64 KiB: batches of one file vary a little in size. */
function grownSize(bytes: number): number {
  const want = bytes + (bytes >>> 3);
  return Math.ceil(want / 65536) * 65536;
}

/** One column of the exported batch: its field and where its buffers lie in wasm memory. */
interface ColumnPlan {
  field: arrow.Field;
  length: number;
  nullCount: number;
  offset: number;
  /** [wasm address, bytes] of the validity bitmap (absent: no nulls), values and offsets. */
  validity?: [number, number];
  values?: [number, number];
  offsets?: [number, number];
}

const UTF8 = new TextDecoder();
const FLAG_NULLABLE = 2n;

/**
 * The batch whose ArrowArray / ArrowSchema structs are at `arrayAddr` / `schemaAddr` in `memory`
 * (parquet-wasm's linear memory), copied into one region from `into`; undefined when a column is
 * not flat (see the header) so the caller decodes the batch another way. Nothing in wasm is
 * called in between, so `memory` cannot grow (and move) while it is read.
 */
export function importWasmBatch(
  memory: ArrayBuffer,
  arrayAddr: number,
  schemaAddr: number,
  into: BatchMemory,
): arrow.Table | undefined {
  const view = new DataView(memory);
  const top = readSchema(view, schemaAddr);
  if (top === undefined || top.format !== '+s' || top.dictionary !== 0) return undefined;
  const topLength = int64(view, arrayAddr);
  const topOffset = int64(view, arrayAddr + 16);
  const nChildren = int64(view, arrayAddr + 32);
  if (topOffset !== 0 || nChildren !== top.children.length) return undefined;
  const childArrays = view.getUint32(arrayAddr + 44, true);
  const plans: ColumnPlan[] = [];
  let total = 0;
  const reserve = (bytes: number): number => {
    const at = total;
    total += (bytes + 7) & ~7;
    return at;
  };
  for (let c = 0; c < top.children.length; c++) {
    const schema = readSchema(view, top.children[c]);
    if (schema === undefined || schema.dictionary !== 0 || schema.children.length !== 0) return undefined;
    const type = flatType(schema.format);
    if (type === undefined) return undefined;
    const field = new arrow.Field(schema.name, type, (schema.flags & FLAG_NULLABLE) !== 0n, schema.metadata);
    const plan = planColumn(view, view.getUint32(childArrays + 4 * c, true), field, topLength);
    if (plan === undefined) return undefined;
    for (const part of [plan.validity, plan.values, plan.offsets]) if (part) reserve(part[1]);
    plans.push(plan);
  }
  const region = into.perBuffer === true ? undefined : into.take(total);
  const wasm = new Uint8Array(memory);
  let at = 0;
  const copy = (part: [number, number] | undefined): Uint8Array | undefined => {
    if (part === undefined) return undefined;
    const out = region === undefined ? into.take(part[1]) : region.subarray(at, at + part[1]);
    out.set(wasm.subarray(part[0], part[0] + part[1]));
    at += (part[1] + 7) & ~7;
    return out;
  };
  const fields: arrow.Field[] = [];
  const children: arrow.Data[] = [];
  for (const p of plans) {
    const nullBitmap = copy(p.validity);
    const data = copy(p.values);
    const valueOffsets = copy(p.offsets);
    fields.push(p.field);
    children.push(
      arrow.makeData({
        type: p.field.type,
        offset: p.offset,
        length: p.length,
        nullCount: p.nullCount,
        ...(nullBitmap ? { nullBitmap } : {}),
        ...(data ? { data } : {}),
        ...(valueOffsets ? { valueOffsets } : {}),
      } as unknown as Parameters<typeof arrow.makeData>[0]) as arrow.Data,
    );
  }
  const schema = new arrow.Schema(fields, top.metadata);
  const struct = arrow.makeData({ type: new arrow.Struct(fields), length: topLength, nullCount: 0, children });
  return new arrow.Table(schema, [new arrow.RecordBatch(schema, struct)]);
}

/** Where a flat column's buffers are and how many bytes of each rows [0, offset + length) need. */
function planColumn(view: DataView, addr: number, field: arrow.Field, rows: number): ColumnPlan | undefined {
  const length = int64(view, addr);
  const nullCount = int64(view, addr + 8);
  const offset = int64(view, addr + 16);
  const nBuffers = int64(view, addr + 24);
  const buffers = view.getUint32(addr + 40, true);
  if (
    length !== rows ||
    nullCount < 0 ||
    offset < 0 ||
    int64(view, addr + 32) !== 0 ||
    view.getUint32(addr + 48, true) !== 0
  )
    return undefined;
  const type = field.type;
  const end = offset + length;
  const buffer = (i: number): number => view.getUint32(buffers + 4 * i, true);
  const plan: ColumnPlan = { field, length, nullCount, offset };
  if (arrow.DataType.isNull(type)) return nBuffers === 0 && nullCount === length ? plan : undefined;
  const validity = buffer(0);
  if (nullCount > 0) {
    if (validity === 0) return undefined;
    plan.validity = [validity, (end + 7) >> 3];
  }
  if (arrow.DataType.isUtf8(type) || arrow.DataType.isBinary(type)) {
    if (nBuffers !== 3) return undefined;
    const offsets = buffer(1);
    plan.offsets = [offsets, 4 * (end + 1)];
    plan.values = [buffer(2), view.getInt32(offsets + 4 * end, true)];
    return plan;
  }
  if (nBuffers !== 2) return undefined;
  const width = byteWidth(type);
  if (width === undefined) return undefined;
  plan.values = [buffer(1), width === 0 ? (end + 7) >> 3 : end * width];
  return plan;
}

/** Bytes per value of a flat fixed-width type, 0 for bits (Bool), undefined for anything else. */
function byteWidth(type: arrow.DataType): number | undefined {
  if (arrow.DataType.isBool(type)) return 0;
  if (arrow.DataType.isInt(type)) return type.bitWidth / 8;
  if (arrow.DataType.isFloat(type)) return [2, 4, 8][type.precision];
  if (arrow.DataType.isDecimal(type)) return type.bitWidth / 8;
  if (arrow.DataType.isDate(type)) return type.unit === arrow.DateUnit.DAY ? 4 : 8;
  if (arrow.DataType.isTime(type)) return type.bitWidth / 8;
  if (arrow.DataType.isTimestamp(type)) return 8;
  return undefined;
}

const TIME_UNITS: Record<string, arrow.TimeUnit> = {
  s: arrow.TimeUnit.SECOND,
  m: arrow.TimeUnit.MILLISECOND,
  u: arrow.TimeUnit.MICROSECOND,
  n: arrow.TimeUnit.NANOSECOND,
};

/** C Data format characters of the integer types: signed, bit width. */
const INT_FORMATS: Record<string, [boolean, 8 | 16 | 32 | 64]> = {
  c: [true, 8],
  C: [false, 8],
  s: [true, 16],
  S: [false, 16],
  i: [true, 32],
  I: [false, 32],
  l: [true, 64],
  L: [false, 64],
};
const FLOAT_FORMATS: Record<string, arrow.Precision> = {
  e: arrow.Precision.HALF,
  f: arrow.Precision.SINGLE,
  g: arrow.Precision.DOUBLE,
};
/** `tt*`: the unit and bit width of a time of day. */
const TIME_FORMATS: Record<string, [arrow.TimeUnit, 32 | 64]> = {
  tts: [arrow.TimeUnit.SECOND, 32],
  ttm: [arrow.TimeUnit.MILLISECOND, 32],
  ttu: [arrow.TimeUnit.MICROSECOND, 64],
  ttn: [arrow.TimeUnit.NANOSECOND, 64],
};

/**
 * The Arrow type of a flat C Data format string, or undefined (nested, large, unknown). Built with
 * the base classes (Int, Float, Date_, Time), as apache-arrow's IPC reader builds them, never the
 * subclasses (Int64, Float64, DateDay, ...): arrow's schema comparison tests `instanceof` the first
 * schema's type class, so a table whose batches came some through C Data and some through IPC (a
 * row group the C Data import declines) must hold the same classes.
 */
function flatType(format: string): arrow.DataType | undefined {
  const int = INT_FORMATS[format];
  if (int) return new arrow.Int(int[0], int[1]);
  const float = FLOAT_FORMATS[format];
  if (float !== undefined) return new arrow.Float(float);
  const time = TIME_FORMATS[format];
  if (time) return new arrow.Time(time[0], time[1]);
  switch (format) {
    case 'n':
      return new arrow.Null();
    case 'b':
      return new arrow.Bool();
    case 'z':
      return new arrow.Binary();
    case 'u':
      return new arrow.Utf8();
    case 'tdD':
      return new arrow.Date_(arrow.DateUnit.DAY);
    case 'tdm':
      return new arrow.Date_(arrow.DateUnit.MILLISECOND);
  }
  const ts = /^ts([smun]):(.*)$/.exec(format);
  if (ts) return new arrow.Timestamp(TIME_UNITS[ts[1]], ts[2] === '' ? null : ts[2]);
  const dec = /^d:(\d+),(-?\d+)(?:,(\d+))?$/.exec(format);
  if (dec && (dec[3] === undefined || dec[3] === '128')) return new arrow.Decimal(Number(dec[2]), Number(dec[1]), 128);
  return undefined;
}

interface SchemaStruct {
  format: string;
  name: string;
  metadata: Map<string, string>;
  flags: bigint;
  children: number[];
  dictionary: number;
}

/** The ArrowSchema struct at `addr` (wasm32: 4-byte pointers, int64 fields 8-byte aligned). */
function readSchema(view: DataView, addr: number): SchemaStruct | undefined {
  if (addr === 0) return undefined;
  const nChildren = int64(view, addr + 24);
  const childList = view.getUint32(addr + 32, true);
  const children: number[] = [];
  for (let i = 0; i < nChildren; i++) children.push(view.getUint32(childList + 4 * i, true));
  return {
    format: cString(view, view.getUint32(addr, true)),
    name: cString(view, view.getUint32(addr + 4, true)),
    metadata: readMetadata(view, view.getUint32(addr + 8, true)),
    flags: view.getBigInt64(addr + 16, true),
    children,
    dictionary: view.getUint32(addr + 36, true),
  };
}

/**
 * C Data metadata: int32 count, then per entry int32 key length, key, int32 value length, value.
 * Kept in key order, the order parquet-wasm's IPC stream carries it in (its C Data export gives
 * its hash map's order): a row group decoded either way is then the same Arrow bytes
 * (decode-pool.test.ts; the buffers, offsets and null bitmaps already were).
 */
function readMetadata(view: DataView, addr: number): Map<string, string> {
  if (addr === 0) return new Map<string, string>();
  const entries: [string, string][] = [];
  const n = view.getInt32(addr, true);
  let at = addr + 4;
  const bytes = new Uint8Array(view.buffer);
  for (let i = 0; i < n; i++) {
    const kl = view.getInt32(at, true);
    const key = UTF8.decode(bytes.subarray(at + 4, at + 4 + kl));
    at += 4 + kl;
    const vl = view.getInt32(at, true);
    const value = UTF8.decode(bytes.subarray(at + 4, at + 4 + vl));
    at += 4 + vl;
    entries.push([key, value]);
  }
  return new Map(entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
}

function cString(view: DataView, addr: number): string {
  if (addr === 0) return '';
  const bytes = new Uint8Array(view.buffer);
  let end = addr;
  while (bytes[end] !== 0) end++;
  return UTF8.decode(bytes.subarray(addr, end));
}

function int64(view: DataView, addr: number): number {
  return Number(view.getBigInt64(addr, true));
}
