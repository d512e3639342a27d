/**
 * The Avro schemas of Iceberg's manifest files and manifest lists, format versions 2 and 3, as the
 * Iceberg table spec defines them ("Manifests" and "Manifest Lists": field names, field ids,
 * optionality; v3 adds data_file's first_row_id, referenced_data_file, content_offset and
 * content_size_in_bytes, and the manifest list's first_row_id). Optional fields are unions with null first and a null default; maps with int keys
 * are arrays of key/value records (`logicalType: map`), as the spec's Avro mapping requires.
 */

/** An Avro schema as JSON (records, unions, primitives, with Iceberg's `field-id` attributes). */
export type AvroSchema = string | AvroSchema[] | { [key: string]: unknown };

/** Optional field: a union with null first, defaulting to null. */
function optional(name: string, id: number, type: AvroSchema, doc?: string): Record<string, unknown> {
  return { name, type: ['null', type], default: null, 'field-id': id, ...(doc ? { doc } : {}) };
}

function required(name: string, id: number, type: AvroSchema, doc?: string): Record<string, unknown> {
  return { name, type, 'field-id': id, ...(doc ? { doc } : {}) };
}

/** An Iceberg map<int, V> in Avro: an array of {key, value} records. */
function intMap(keyId: number, valueId: number, value: AvroSchema): AvroSchema {
  return {
    type: 'array',
    logicalType: 'map',
    items: {
      type: 'record',
      name: `k${keyId}_v${valueId}`,
      fields: [
        { name: 'key', type: 'int', 'field-id': keyId },
        { name: 'value', type: value, 'field-id': valueId },
      ],
    },
  };
}

/** One field of the partition tuple: its name, partition field id and Avro type (already optional). */
export interface PartitionAvroField {
  name: string;
  fieldId: number;
  type: AvroSchema;
}

/** An exported Iceberg format version. */
export type IcebergFormatVersion = 2 | 3;

/** The data_file fields v3 adds (spec "Data File Fields"): row lineage and deletion vectors. */
const V3_DATA_FILE_FIELDS = [
  optional('first_row_id', 142, 'long', 'The _row_id for the first row in the data file'),
  optional('referenced_data_file', 143, 'string', 'Fully qualified location of a data file that all deletes reference'),
  optional('content_offset', 144, 'long', 'The offset in the file where the content starts'),
  optional('content_size_in_bytes', 145, 'long', 'The length of a referenced content stored in the file'),
];

/** The Avro schema of a manifest file (format `version`) whose partition tuple has `partition`'s fields. */
export function manifestEntrySchema(
  partition: readonly PartitionAvroField[],
  version: IcebergFormatVersion = 2,
): AvroSchema {
  return {
    type: 'record',
    name: 'manifest_entry',
    fields: [
      required('status', 0, 'int'),
      optional('snapshot_id', 1, 'long'),
      optional('sequence_number', 3, 'long'),
      optional('file_sequence_number', 4, 'long'),
      required('data_file', 2, {
        type: 'record',
        name: 'r2',
        fields: [
          required('content', 134, 'int', 'Contents of the file: 0=data, 1=position deletes, 2=equality deletes'),
          required('file_path', 100, 'string', 'Location URI with FS scheme'),
          required('file_format', 101, 'string', 'File format name: avro, orc, or parquet'),
          required(
            'partition',
            102,
            {
              type: 'record',
              name: 'r102',
              fields: partition.map((p) => ({
                name: p.name,
                type: ['null', p.type],
                default: null,
                'field-id': p.fieldId,
              })),
            },
            'Partition data tuple, schema based on the partition spec',
          ),
          required('record_count', 103, 'long', 'Number of records in the file'),
          required('file_size_in_bytes', 104, 'long', 'Total file size in bytes'),
          optional('column_sizes', 108, intMap(117, 118, 'long'), 'Map of column id to total size on disk'),
          optional(
            'value_counts',
            109,
            intMap(119, 120, 'long'),
            'Map of column id to total count, including null and NaN',
          ),
          optional('null_value_counts', 110, intMap(121, 122, 'long'), 'Map of column id to null value count'),
          optional(
            'nan_value_counts',
            137,
            intMap(138, 139, 'long'),
            'Map of column id to number of NaN values in the column',
          ),
          optional('lower_bounds', 125, intMap(126, 127, 'bytes'), 'Map of column id to lower bound'),
          optional('upper_bounds', 128, intMap(129, 130, 'bytes'), 'Map of column id to upper bound'),
          optional('key_metadata', 131, 'bytes', 'Encryption key metadata blob'),
          optional('split_offsets', 132, { type: 'array', items: 'long', 'element-id': 133 }, 'Splittable offsets'),
          optional(
            'equality_ids',
            135,
            { type: 'array', items: 'int', 'element-id': 136 },
            'Equality comparison field IDs',
          ),
          optional('sort_order_id', 140, 'int', 'Sort order ID'),
          ...(version === 3 ? V3_DATA_FILE_FIELDS : []),
        ],
      }),
    ],
  };
}

/** The Avro schema of a manifest list of format `version`. */
export function manifestListSchema(version: IcebergFormatVersion = 2): AvroSchema {
  return {
    type: 'record',
    name: 'manifest_file',
    fields: [
      required('manifest_path', 500, 'string', 'Location URI with FS scheme'),
      required('manifest_length', 501, 'long', 'Total file size in bytes'),
      required('partition_spec_id', 502, 'int', 'Spec ID used to write'),
      required('content', 517, 'int', 'Contents of the manifest: 0=data, 1=deletes'),
      required('sequence_number', 515, 'long', 'Sequence number when the manifest was added'),
      required('min_sequence_number', 516, 'long', 'Lowest sequence number in the manifest'),
      required('added_snapshot_id', 503, 'long', 'Snapshot ID that added the manifest'),
      required('added_files_count', 504, 'int', 'Added entry count'),
      required('existing_files_count', 505, 'int', 'Existing entry count'),
      required('deleted_files_count', 506, 'int', 'Deleted entry count'),
      required('added_rows_count', 512, 'long', 'Added rows count'),
      required('existing_rows_count', 513, 'long', 'Existing rows count'),
      required('deleted_rows_count', 514, 'long', 'Deleted rows count'),
      optional(
        'partitions',
        507,
        {
          type: 'array',
          'element-id': 508,
          items: {
            type: 'record',
            name: 'r508',
            fields: [
              required('contains_null', 509, 'boolean', 'True if any file has a null partition value'),
              optional('contains_nan', 518, 'boolean', 'True if any file has a nan partition value'),
              optional('lower_bound', 510, 'bytes', 'Partition lower bound for all files'),
              optional('upper_bound', 511, 'bytes', 'Partition upper bound for all files'),
            ],
          },
        },
        'Summary for each partition',
      ),
      optional('key_metadata', 519, 'bytes', 'Encryption key metadata blob'),
      ...(version === 3
        ? [optional('first_row_id', 520, 'long', 'The starting _row_id to assign to rows added by ADDED data files')]
        : []),
    ],
  };
}
