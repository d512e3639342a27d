import { describe, expect, it } from 'vitest';
import { mergeConfig, mergeConfigFromOptions } from '../../lib/mergetree/merge-config.js';
import { TableOptions } from '../../lib/schema/options.js';
import { schemaOf } from './fixtures.js';

describe('mergeConfigFromOptions', () => {
  it('reads Paimon-named options into a MergeConfig', () => {
    const schema = schemaOf(['id INT', 'a INT', 'b STRING', 'g1 INT', 'g2 INT', 'ts BIGINT'], ['id']);
    const options = new TableOptions(
      {
        'merge-engine': 'partial-update',
        'sequence.field': 'ts',
        'sequence.field.sort-order': 'descending',
        'fields.g1,g2.sequence-group': 'a,b',
        'fields.a.aggregate-function': 'sum',
        'fields.a.ignore-retract': 'true',
        'fields.b.list-agg-delimiter': ';',
        'partial-update.remove-record-on-sequence-group': 'g1',
      },
      schema.fields,
    );

    const cfg = mergeConfigFromOptions(options, ['id']);

    expect(cfg).toEqual(
      mergeConfig({
        engine: 'partial-update',
        sequenceFields: ['ts'],
        sequenceDescending: true,
        sequenceGroups: [{ sequenceFields: ['g1', 'g2'], fields: ['a', 'b'] }],
        aggregateFunctions: { a: 'sum' },
        ignoreRetract: ['a'],
        listaggDelimiters: { b: ';' },
        partialUpdateRemoveRecordOnSequenceGroup: ['g1'],
      }),
    );
  });

  it('defaults to deduplicate with nothing set', () => {
    expect(mergeConfigFromOptions(new TableOptions({}), ['id'])).toEqual(mergeConfig());
  });
});
