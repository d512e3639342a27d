import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OptionError } from '../../lib/errors.js';
import {
  COLUMN_FORM_OPTIONS,
  FIELD_OPTIONS,
  TABLE_OPTIONS,
  TableOptions,
  type OptionDecl,
  parseDuration,
  parseMemory,
  renderOptionsMarkdown,
  validateOptions,
} from '../../lib/schema/options.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { applySchemaChanges } from '../../lib/schema/schema-evolution.js';
import type { TableSchema } from '../../lib/schema/types.js';

const FIELDS = parseSchemaText(
  'id BIGINT NOT NULL, name STRING, qty INT, price DECIMAL(10,2), ok BOOLEAN, ts TIMESTAMP(3), v1 INT, v2 INT',
);

function optionError(raw: Record<string, string>, fields = FIELDS): OptionError {
  try {
    validateOptions(raw, fields);
  } catch (e) {
    expect(e).toBeInstanceOf(OptionError);
    return e as OptionError;
  }
  throw new Error(`expected an OptionError for ${JSON.stringify(raw)}`);
}

describe('option values', () => {
  it.each([
    ['1 h', 3_600_000],
    ['30 min', 1_800_000],
    ['10 s', 10_000],
    ['500 ms', 500],
    ['1d', 86_400_000],
    ['2 hours', 7_200_000],
    ['250', 250],
    [' 3 MIN ', 180_000],
  ])('reads duration %j', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '1.5 h', '1 fortnight', '-1 s', 'h'])('refuses duration %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });

  it.each([
    ['256 mb', 256 * 2 ** 20],
    ['64MB', 64 * 2 ** 20],
    ['1 gb', 2 ** 30],
    ['512 kb', 512 * 1024],
    ['4096', 4096],
    ['2 bytes', 2],
  ])('reads memory size %j', (text, bytes) => {
    expect(parseMemory(text)).toBe(bytes);
  });

  it.each(['', '1.5 gb', '10 parsecs', 'mb'])('refuses memory size %j', (text) => {
    expect(parseMemory(text)).toBeUndefined();
  });
});

describe('TableOptions defaults', () => {
  it('applies Paimon defaults, with derived defaults following their base', () => {
    // Act
    const o = new TableOptions();

    // Assess
    expect(o.bucket).toBe(1);
    expect(o.bucketKey).toEqual([]);
    expect(o.mergeEngine).toBe('deduplicate');
    expect(o.changelogProducer).toBe('none');
    expect(o.changelogProducerRowDeduplicate).toBe(false);
    expect(o.sequenceField).toEqual([]);
    expect(o.sequenceDescending).toBe(false);
    expect(o.ignoreDelete).toBe(false);
    expect(o.writeBufferSize).toBe(256 * 2 ** 20);
    expect(o.writeBufferSpillable).toBe(true);
    expect(o.writeOnly).toBe(false);
    expect(o.targetFileSize).toBe(128 * 2 ** 20);
    expect(o.fileCompression).toBe('zstd');
    expect(o.numSortedRunCompactionTrigger).toBe(5);
    expect(o.numSortedRunStopTrigger).toBe(8);
    expect(o.numLevels).toBe(6);
    expect(o.compactionMaxSizeAmplificationPercent).toBe(200);
    expect(o.compactionSizeRatio).toBe(1);
    expect(o.fullCompactionDeltaCommits).toBeUndefined();
    expect(o.snapshotNumRetainedMin).toBe(10);
    expect(o.snapshotNumRetainedMax).toBe(2147483647);
    expect(o.snapshotTimeRetained).toBe(3_600_000);
    expect(o.snapshotExpireLimit).toBe(50);
    expect([o.changelogNumRetainedMin, o.changelogNumRetainedMax, o.changelogTimeRetained]).toEqual([
      10, 2147483647, 3_600_000,
    ]);
    expect(o.changelogDecoupled).toBe(false);
    expect(o.consumerExpirationTime).toBeUndefined();
    expect(o.consumerIgnoreProgress).toBe(false);
    expect(o.scanMode).toBe('latest-full');
    expect(o.scanOnExpired).toBe('fail');
    expect([o.commitMaxRetries, o.commitMinRetryWait, o.commitMaxRetryWait, o.commitTimeout]).toEqual([
      30,
      10,
      10_000,
      undefined,
    ]);
    expect([o.manifestTargetFileSize, o.manifestMergeMinCount, o.manifestFullCompactionThresholdSize]).toEqual([
      8 * 2 ** 20,
      30,
      16 * 2 ** 20,
    ]);
    expect(o.partitionDefaultName).toBe('__DEFAULT_PARTITION__');
    expect(o.orphanFilesOlderThan).toBe(86_400_000);
  });

  it('derives stop-trigger, num-levels and changelog retention from what is set', () => {
    const o = new TableOptions({
      'num-sorted-run.compaction-trigger': '3',
      'snapshot.num-retained.min': '4',
      'snapshot.time-retained': '2 h',
    });
    expect(o.numSortedRunStopTrigger).toBe(6);
    expect(o.numLevels).toBe(4);
    expect(o.changelogNumRetainedMin).toBe(4);
    expect(o.changelogTimeRetained).toBe(7_200_000);
    expect(new TableOptions({ 'changelog.time-retained': '1 d' }).changelogDecoupled).toBe(true);
  });

  it("resolves scan.mode like Paimon's default mode", () => {
    expect(new TableOptions({ 'scan.snapshot-id': '5' }).scanMode).toBe('from-snapshot');
    expect(new TableOptions({ 'scan.timestamp-millis': '1700000000000' }).scanMode).toBe('from-timestamp');
    expect(new TableOptions({ 'scan.mode': 'from-snapshot-full', 'scan.snapshot-id': '2' }).scanSnapshotId).toBe(2);
  });

  it('gives every declared option a typed value through get(), defaults parsed', () => {
    const o = new TableOptions();
    for (const d of TABLE_OPTIONS as readonly OptionDecl[]) {
      const v = o.get(d.key);
      if (d.type === 'list') expect(v, d.key).toEqual(d.default === undefined ? [] : expect.anything());
      else if (d.default === undefined) expect(v, d.key).toBeUndefined();
      else expect(v, d.key).not.toBeUndefined();
    }
    expect(o.get('commit.min-retry-wait')).toBe(10);
    expect(o.get('fields.name.list-agg-delimiter')).toBe(',');
  });

  it('keeps the raw map as given', () => {
    const raw = { bucket: '4', 'write-buffer-size': '64 mb' };
    const o = new TableOptions(raw);
    expect(o.toRecord()).toEqual(raw);
    expect(o.has('bucket')).toBe(true);
    expect(o.has('num-levels')).toBe(false);
    expect(o.writeBufferSize).toBe(64 * 2 ** 20);
  });
});

describe('per-column options', () => {
  it('reads aggregate functions, retract flags, delimiters and sequence groups', () => {
    // Prepare
    const raw = {
      'merge-engine': 'partial-update',
      'fields.v1.sequence-group': 'qty,price',
      'fields.ts,ok.sequence-group': 'name',
      'fields.qty.aggregate-function': 'sum',
      'fields.qty.ignore-retract': 'true',
      'fields.name.aggregate-function': 'listagg',
      'fields.name.list-agg-delimiter': ' | ',
      'partial-update.remove-record-on-sequence-group': 'v1',
    };

    // Act
    const o = new TableOptions(raw, FIELDS);

    // Assess
    expect(o.aggregateFunction('qty')).toBe('sum');
    expect(o.aggregateFunction('price')).toBeUndefined();
    expect(o.aggregateFunctions()).toEqual({ qty: 'sum', name: 'listagg' });
    expect(o.ignoreRetract('qty')).toBe(true);
    expect(o.ignoreRetract('name')).toBe(false);
    expect(o.ignoreRetractColumns()).toEqual(['qty']);
    expect(o.listAggDelimiter('name')).toBe(' | ');
    expect(o.listAggDelimiter('qty')).toBe(',');
    expect(o.sequenceGroups()).toEqual([
      { sequenceFields: ['v1'], columns: ['qty', 'price'] },
      { sequenceFields: ['ts', 'ok'], columns: ['name'] },
    ]);
    expect(o.partialUpdateRemoveRecordOnSequenceGroup).toEqual(['v1']);
  });

  it('rejects per-column options that name missing columns, listing the columns', () => {
    const e = optionError({ 'merge-engine': 'aggregation', 'fields.quantity.aggregate-function': 'sum' });
    expect(e.message).toMatch(/names column quantity, which the table does not have/);
    expect(e.message).toContain('id, name, qty');
    expect(optionError({ 'merge-engine': 'partial-update', 'fields.v1.sequence-group': 'qty,nope' }).message).toMatch(
      /column nope/,
    );
    expect(optionError({ 'sequence.field': 'updated_at' }).message).toMatch(/sequence.field names column updated_at/);
  });

  it.each([
    ['sum', 'name', /sum does not fit column name of type STRING; sum takes TINYINT/],
    ['count', 'price', /count does not fit column price of type DECIMAL/],
    ['bool_or', 'qty', /bool_or does not fit column qty of type INT/],
    ['listagg', 'qty', /listagg does not fit/],
    ['max', 'ok', /max does not fit column ok of type BOOLEAN/],
  ])('rejects aggregate function %s on %s', (fn, col, message) => {
    expect(optionError({ 'merge-engine': 'aggregation', [`fields.${col}.aggregate-function`]: fn }).message).toMatch(
      message,
    );
  });

  it('accepts functions that fit their column', () => {
    const raw = {
      'merge-engine': 'aggregation',
      'fields.qty.aggregate-function': 'count',
      'fields.price.aggregate-function': 'sum',
      'fields.ok.aggregate-function': 'bool_and',
      'fields.ts.aggregate-function': 'max',
      'fields.name.aggregate-function': 'last_non_null_value',
    };
    expect(() => validateOptions(raw, FIELDS)).not.toThrow();
  });

  it('rejects a column in two sequence groups', () => {
    const e = optionError({
      'merge-engine': 'partial-update',
      'fields.v1.sequence-group': 'qty',
      'fields.v2.sequence-group': 'qty,name',
    });
    expect(e.message).toMatch(/column qty is in two sequence groups/);
  });
});

describe('option errors', () => {
  it.each([
    ['buckets', /unknown table option "buckets" \(did you mean bucket or/],
    ['merge_engine', /did you mean merge-engine\?/],
    ['compaction-trigger', /num-sorted-run\.compaction-trigger/],
    ['snapshot.time-retain', /snapshot\.time-retained/],
    ['fields.qty.agg-function', /fields\.qty\.aggregate-function/],
    [
      'totally-unrelated-thing',
      /unknown table option "totally-unrelated-thing"; every option is listed in docs\/OPTIONS.md/,
    ],
  ])('names the unknown option %s and suggests the closest', (key, message) => {
    const e = optionError({ [key]: 'x' });
    expect(e.option).toBe(key);
    expect(e.message).toMatch(message);
  });

  it.each([
    [{ bucket: 'four' }, /bucket = "four" is not valid; expected an integer/],
    [
      { bucket: '0' },
      /bucket = "0" is not valid: use a number ≥ 1, or -1 for a bucket-unaware table without a primary key/,
    ],
    [
      { 'merge-engine': 'dedup' },
      /merge-engine = "dedup" is not valid; expected one of deduplicate, partial-update, aggregation, first-row/,
    ],
    [{ 'write-only': 'yes' }, /write-only = "yes" is not valid; expected true or false/],
    [{ 'write-buffer-size': 'lots' }, /write-buffer-size = "lots" is not valid; expected a size such as "512 kb"/],
    [
      { 'snapshot.time-retained': '1 fortnight' },
      /snapshot.time-retained = "1 fortnight" is not valid; expected a duration such as "10 s"/,
    ],
    [{ 'sequence.field': 'qty,,price' }, /sequence.field = "qty,,price" is not valid; expected a comma-separated list/],
    [{ 'file.compression': 'brotli' }, /expected one of zstd, lz4, snappy, uncompressed/],
    [{ 'incremental-between': '1,2,3' }, /give exactly two snapshot ids/],
    [{ 'partition.default-name': '' }, /partition.default-name = "" is not valid: it cannot be empty/],
  ])('names the option, the bad value and what is allowed: %j', (raw, message) => {
    expect(optionError(raw).message).toMatch(message);
  });

  it('refuses postpone buckets with the reason (-1 is checked against the primary key: test/schema/table-schema.test.ts)', () => {
    expect(optionError({ bucket: '-2' }).message).toMatch(/postpone bucket mode\) is not supported/);
    expect(optionError({ bucket: '-3' }).message).toMatch(/out of range/);
  });

  it('refuses Paimon options varve does not support, saying why', () => {
    expect(optionError({ 'dynamic-bucket.target-row-num': '100' }).message).toMatch(
      /not supported by varve: varve supports fixed buckets only/,
    );
  });

  it('takes deletion-vectors.enabled with deduplicate and first-row only, saying why', () => {
    expect(() => validateOptions({ 'deletion-vectors.enabled': 'true' }, FIELDS)).not.toThrow();
    expect(() =>
      validateOptions({ 'deletion-vectors.enabled': 'true', 'merge-engine': 'first-row' }, FIELDS),
    ).not.toThrow();
    expect(optionError({ 'deletion-vectors.enabled': 'true', 'merge-engine': 'partial-update' }).message).toMatch(
      /deduplicate or first-row only: with partial-update the live row of a key combines several stored rows/,
    );
    expect(optionError({ 'deletion-vectors.enabled': 'true', 'merge-engine': 'aggregation' }).message).toMatch(
      /deletion-vectors.enabled works with merge-engine deduplicate or first-row only/,
    );
  });

  it('refuses values that are not strings', () => {
    expect(optionError({ bucket: 4 } as unknown as Record<string, string>).message).toMatch(/must be given as text/);
  });

  it.each([
    [{ 'num-sorted-run.stop-trigger': '3' }, /stop-trigger \(3\) is below num-sorted-run.compaction-trigger \(5\)/],
    [
      { 'snapshot.num-retained.min': '20', 'snapshot.num-retained.max': '5' },
      /snapshot.num-retained.min \(20\) is above/,
    ],
    [
      { 'commit.min-retry-wait': '1 min', 'commit.max-retry-wait': '1 s' },
      /commit.min-retry-wait .* is above commit.max-retry-wait/,
    ],
    [
      { 'merge-engine': 'first-row', 'changelog-producer': 'input' },
      /first-row works with changelog-producer none or lookup/,
    ],
    [
      { 'fields.qty.aggregate-function': 'sum' },
      /only applies to merge-engine aggregation or partial-update, but the table's merge-engine is deduplicate/,
    ],
    [{ 'partial-update.remove-record-on-delete': 'true' }, /only applies to merge-engine partial-update/],
    [
      { 'merge-engine': 'aggregation', 'fields.v1.sequence-group': 'qty' },
      /sequence-group only applies to merge-engine partial-update/,
    ],
    [{ 'scan.mode': 'from-snapshot' }, /needs scan.snapshot-id/],
    [{ 'scan.mode': 'from-timestamp' }, /needs scan.timestamp-millis/],
    [{ 'scan.mode': 'latest', 'scan.snapshot-id': '3' }, /scan.snapshot-id has no effect with scan.mode=latest/],
    [{ 'scan.snapshot-id': '3', 'scan.tag-name': 't' }, /keep one/],
    [
      { 'merge-engine': 'partial-update', 'partial-update.remove-record-on-sequence-group': 'v1' },
      /not the sequence field of any/,
    ],
  ])('refuses contradicting options %j', (raw, message) => {
    expect(optionError(raw).message).toMatch(message);
  });
});

describe('Parquet writer options (parquet.*)', () => {
  it('reads the supported keys, per-column dictionary flags and their defaults', () => {
    const dflt = new TableOptions({}, FIELDS).parquetWriter();
    expect(dflt).toEqual({
      dictionary: undefined,
      columnDictionary: {},
      dictionaryPageSize: 1024 * 1024,
      dataPageSize: 1024 * 1024,
      writerVersion: 1,
    });
    const o = new TableOptions(
      {
        'parquet.enable.dictionary': 'false',
        'parquet.enable.dictionary#name': 'TRUE',
        'parquet.enable.dictionary#qty': 'false',
        'parquet.dictionary.page.size': '64 kb',
        'parquet.page.size': '8192',
        'parquet.writer.version': 'PARQUET_2_0',
      },
      FIELDS,
    );
    expect(o.parquetWriter()).toEqual({
      dictionary: false,
      columnDictionary: { name: true, qty: false },
      dictionaryPageSize: 65536,
      dataPageSize: 8192,
      writerVersion: 2,
    });
    expect(o.get('parquet.enable.dictionary#name')).toBe(true);
    expect(o.get('parquet.enable.dictionary#price')).toBeUndefined();
    expect(new TableOptions({ 'parquet.writer.version': 'v2' }).parquetWriter().writerVersion).toBe(2);
  });

  it.each([
    [{ 'parquet.enable.dictionary': 'yes' }, /parquet.enable.dictionary = "yes" is not valid; expected true or false/],
    [
      { 'parquet.enable.dictionary#name': '1' },
      /parquet.enable.dictionary#name = "1" is not valid; expected true or false/,
    ],
    [{ 'parquet.dictionary.page.size': '64 kilo' }, /expected a size such as "512 kb"/],
    [{ 'parquet.page.size': '0' }, /parquet.page.size = "0" is out of range; it must be from 1 to 2147483647 bytes/],
    [{ 'parquet.page.size': '4 gb' }, /out of range/],
    [{ 'parquet.writer.version': 'v3' }, /expected one of v1, v2, PARQUET_1_0, PARQUET_2_0/],
    [{ 'parquet.enable.dictionary#': 'true' }, /names no column; write it like parquet.enable.dictionary#<col>/],
    [
      { 'parquet.enable.dictionary#nope': 'true' },
      /parquet.enable.dictionary#nope names column nope, which the table does not have/,
    ],
    [{ 'parquet.enable.dictionary#Name': 'true' }, /did you mean name\?/],
  ])('refuses a bad value or column, saying the expected form: %j', (raw, message) => {
    expect(optionError(raw).message).toMatch(message);
  });

  it.each([
    ['parquet.enable.dictionnary', 'parquet.enable.dictionnary is not a Parquet writer option varve supports'],
    ['parquet.page.size#name', 'option parquet.page.size has no per-column form'],
    ['parquet.writer.max-padding', 'parquet.writer.max-padding is not a Parquet writer option varve supports'],
  ])('refuses unknown parquet.* key %s, listing the supported ones', (key, start) => {
    const message = optionError({ [key]: '1' }).message;
    expect(message).toContain(start);
    expect(message).toContain(
      'the parquet.* options varve supports are parquet.enable.dictionary, parquet.dictionary.page.size, parquet.page.size, parquet.writer.version, parquet.enable.dictionary#<col> (docs/OPTIONS.md)',
    );
  });

  it.each([
    ['parquet.compression', /set the codec with `file.compression`/],
    ['parquet.block.size', /varve ends row groups by row count/],
    ['parquet.page.row.count.limit', /pages already end at about 20,000 rows/],
    ['parquet.bloom.filter.enabled', /parquet-wasm does not write bloom filters/],
    ['parquet.bloom.filter.enabled#name', /parquet-wasm does not write bloom filters/],
  ])("refuses parquet-mr's %s, saying why", (key, reason) => {
    const message = optionError({ [key]: '1' }).message;
    expect(message).toMatch(new RegExp(`option ${key.replaceAll('.', '\\.')} is not supported by varve`));
    expect(message).toMatch(reason);
  });
});

describe('Parquet writer options through schema changes', () => {
  it('follow a renamed column, go with a dropped one, and reset per column', () => {
    // Prepare
    const base: TableSchema = {
      version: 1,
      id: 0,
      fields: parseSchemaText('id INT NOT NULL, a STRING, b STRING'),
      highestFieldId: 2,
      partitionKeys: [],
      primaryKeys: ['id'],
      options: { 'parquet.enable.dictionary#a': 'false', 'parquet.enable.dictionary#b': 'false' },
      timeMillis: 0,
    };
    // Act
    const renamed = applySchemaChanges(base, [{ kind: 'rename-column', from: 'a', to: 'z' }]);
    const dropped = applySchemaChanges(renamed, [{ kind: 'drop-column', name: 'b' }]);
    const reset = applySchemaChanges(dropped, [
      { kind: 'reset-option', key: 'parquet.enable.dictionary#z' },
      { kind: 'reset-option', key: 'parquet.enable.dictionary#id' },
    ]);
    // Assess
    expect(renamed.options).toEqual({ 'parquet.enable.dictionary#z': 'false', 'parquet.enable.dictionary#b': 'false' });
    expect(dropped.options).toEqual({ 'parquet.enable.dictionary#z': 'false' });
    expect(reset.options).toEqual({});
    expect(() =>
      applySchemaChanges(base, [{ kind: 'set-option', key: 'parquet.enable.dictionary#zz', value: 'true' }]),
    ).toThrow(/parquet.enable.dictionary#zz names column zz, which the table does not have/);
  });
});

describe('options reference', () => {
  it('declares every option once with a description', () => {
    const keys = TABLE_OPTIONS.map((d) => d.key);
    expect(new Set(keys).size).toBe(keys.length);
    for (const d of [...TABLE_OPTIONS, ...FIELD_OPTIONS])
      expect(d.description.length, JSON.stringify(d)).toBeGreaterThan(10);
  });

  it('docs/OPTIONS.md is the generated text (regenerate with npx tsx scripts/gen-options-doc.ts)', () => {
    const onDisk = readFileSync(new URL('../../docs/OPTIONS.md', import.meta.url), 'utf8');
    expect(onDisk).toBe(renderOptionsMarkdown());
  });

  it('lists every option in the rendered table', () => {
    const md = renderOptionsMarkdown();
    for (const d of TABLE_OPTIONS) expect(md).toContain(`| \`${d.key}\` |`);
    for (const d of [...FIELD_OPTIONS, ...COLUMN_FORM_OPTIONS]) expect(md).toContain(`| \`${d.pattern}\` |`);
  });
});
