/**
 * Avro object container files through avsc: encode records with a schema and file metadata
 * (Iceberg's `schema`, `partition-spec`, … keys), decode them back. Longs are bigint both ways,
 * since Iceberg's longs (snapshot ids, microsecond timestamps) pass 2^53.
 */
import avro from 'avsc';
import { CorruptMetadataError } from '../errors.js';
import type { AvroSchema } from './avro-schemas.js';

/** avsc's long as a JavaScript bigint (avsc's default refuses values beyond 2^53). */
const BIGINT_LONG = avro.types.LongType.__with({
  fromBuffer: (buf: Buffer) => buf.readBigInt64LE(),
  toBuffer: (n: bigint) => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64LE(BigInt(n));
    return buf;
  },
  fromJSON: (n: number | string) => BigInt(n),
  toJSON: (n: bigint) => Number(n),
  isValid: (n: unknown) => typeof n === 'bigint',
  compare: (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0),
});

/** The avsc type of `schema`, longs as bigint. */
function avroType(schema: AvroSchema): avro.Type {
  return avro.Type.forSchema(schema as avro.Schema, { registry: { long: BIGINT_LONG } });
}

/** The bytes of an Avro container file holding `records` (deflate-compressed, as Iceberg writes by default). */
export async function encodeAvroFile(
  schema: AvroSchema,
  records: readonly unknown[],
  metadata: Record<string, string>,
): Promise<Uint8Array> {
  const type = avroType(schema);
  const encoder = new avro.streams.BlockEncoder(type, {
    codec: 'deflate',
    metadata: Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k, Buffer.from(v, 'utf8')])),
    writeHeader: 'never',
  } as unknown as avro.EncoderOptions) as unknown as avro.streams.BlockEncoder & {
    _schema: unknown;
    _writeHeader(): void;
  };
  // avsc 5.7 writes `_schema` into the header when set, else the parsed type's schema, which
  // drops Iceberg's `field-id` attributes; the parsed type (bigint longs) still encodes. The
  // header is written here, eagerly, so a file of no records is valid too. Pinned version; the
  // golden-file test checks that the header keeps every field id.
  encoder._schema = schema;
  const chunks: Buffer[] = [];
  const done = new Promise<void>((resolve, reject) => {
    encoder.on('data', (c: Buffer) => chunks.push(c));
    encoder.on('end', () => resolve());
    encoder.on('error', reject);
  });
  encoder._writeHeader();
  for (const r of records) encoder.write(r);
  encoder.end();
  await done;
  return new Uint8Array(Buffer.concat(chunks));
}

/** The records and file metadata of an Avro container file; `what` names it in errors. */
export async function decodeAvroFile(
  bytes: Uint8Array,
  what: string,
): Promise<{ records: unknown[]; metadata: Record<string, string> }> {
  const decoder = new avro.streams.BlockDecoder({
    parseHook: (s: avro.Schema) => avroType(s as AvroSchema),
  } as unknown as avro.DecoderOptions);
  const records: unknown[] = [];
  let metadata: Record<string, string> = {};
  const done = new Promise<void>((resolve, reject) => {
    decoder.on('metadata', (_type: unknown, _codec: unknown, header: { meta: Record<string, Buffer> }) => {
      metadata = Object.fromEntries(Object.entries(header.meta).map(([k, v]) => [k, v.toString('utf8')]));
    });
    decoder.on('data', (r: unknown) => records.push(r));
    decoder.on('end', () => resolve());
    decoder.on('error', reject);
  });
  decoder.end(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  try {
    await done;
  } catch (e) {
    throw new CorruptMetadataError(`${what} is not a valid Avro file: ${(e as Error).message}`, { cause: e });
  }
  return { records, metadata };
}
