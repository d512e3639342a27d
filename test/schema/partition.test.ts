import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../lib/errors.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import {
  escapePathName,
  parsePartitionPath,
  parsePartitionSpec,
  partitionPath,
  unescapePathName,
} from '../../lib/schema/partition.js';
import { rng, testSeed } from '../helpers/random.js';

const DEFAULT = '__DEFAULT_PARTITION__';
const [dt, region, ts, flag, amount] = parseSchemaText(
  'dt DATE, region STRING, ts TIMESTAMP(3), flag BOOLEAN, amount DECIMAL(6,2)',
);

describe('partitionPath', () => {
  it('writes key=value segments in key order', () => {
    expect(partitionPath(['dt', 'region'], [19723, 'eu'], [dt.type, region.type], DEFAULT)).toBe(
      'dt=2024-01-01/region=eu',
    );
    expect(partitionPath([], [], [], DEFAULT)).toBe('');
  });

  it('writes NULL and empty strings as the default partition name', () => {
    expect(partitionPath(['dt', 'region'], [null, ''], [dt.type, region.type], DEFAULT)).toBe(
      `dt=${DEFAULT}/region=${DEFAULT}`,
    );
  });

  it('prints other types as their text, escaped', () => {
    const path = partitionPath(
      ['ts', 'flag', 'amount'],
      [1704067200000n, true, '-1.50'],
      [ts.type, flag.type, amount.type],
      DEFAULT,
    );
    expect(path).toBe('ts=2024-01-01T00%3A00%3A00.000Z/flag=true/amount=-1.50');
    expect(parsePartitionPath(path)).toEqual({ ts: '2024-01-01T00:00:00.000Z', flag: 'true', amount: '-1.50' });
  });

  it('escapes separators, Hive specials and invisible characters as %XX', () => {
    expect(escapePathName('a/b=c%d#e?f:g')).toBe('a%2Fb%3Dc%25d%23e%3Ff%3Ag');
    expect(escapePathName('tab\there\u0000\u007f')).toBe('tab%09here%00%7F');
    expect(escapePathName('zero\u200bwidth\u0085')).toBe('zero%E2%80%8Bwidth%C2%85');
    expect(escapePathName('..')).toBe('..');
    expect(escapePathName('héllo wörld 世界')).toBe('héllo wörld 世界');
  });

  it('round-trips random keys and values through the path', () => {
    const seed = testSeed('schema.partition');
    const r = rng(seed);
    const alphabet = [
      'a',
      'Z',
      '0',
      '/',
      '=',
      '%',
      '#',
      '?',
      ':',
      '\\',
      '*',
      '"',
      "'",
      '[',
      ']',
      '{',
      '^',
      '.',
      ' ',
      '\n',
      '\u0001',
      'é',
      '😀',
      '%41',
      '\u200b',
    ];
    for (let k = 0; k < 300; k++) {
      const n = r.int(1, 3);
      const keys = Array.from({ length: n }, (_, i) => `k${i}${r.pick(alphabet)}`);
      const values = Array.from({ length: n }, () =>
        Array.from({ length: r.int(1, 6) }, () => r.pick(alphabet)).join(''),
      );
      const path = partitionPath(
        keys,
        values,
        keys.map(() => region.type),
        DEFAULT,
      );
      expect(path.split('/'), `seed ${seed}`).toHaveLength(n);
      expect(parsePartitionPath(path), `${JSON.stringify(values)} seed ${seed}`).toEqual(
        Object.fromEntries(keys.map((key, i) => [key, values[i]])),
      );
    }
  });

  it('refuses mismatched argument lists', () => {
    expect(() => partitionPath(['dt'], [], [dt.type], DEFAULT)).toThrow(InvalidArgumentError);
  });
});

describe('parsePartitionPath', () => {
  it('unescapes keys and values', () => {
    expect(parsePartitionPath('a%3Db=x%2Fy/c=%E4%B8%96')).toEqual({ 'a=b': 'x/y', c: '世' });
    expect(parsePartitionPath('')).toEqual({});
    expect(unescapePathName('100%')).toBe('100%');
  });

  it('refuses segments that are not key=value', () => {
    expect(() => parsePartitionPath('dt=1/bucket-0')).toThrow(/segment "bucket-0" that is not key=value/);
    expect(() => parsePartitionPath('=x')).toThrow(InvalidArgumentError);
  });
});

describe('parsePartitionSpec', () => {
  it('reads CLI filters', () => {
    expect(parsePartitionSpec('dt=2024-01-01, region=eu')).toEqual({ dt: '2024-01-01', region: 'eu' });
    expect(parsePartitionSpec('note=a=b')).toEqual({ note: 'a=b' });
    expect(parsePartitionSpec('region=')).toEqual({ region: '' });
  });

  it.each([
    ['', /empty partition filter/],
    ['dt', /"dt" is not key=value/],
    ['dt=1,,region=eu', /"" is not key=value/],
    ['dt=1,dt=2', /gives dt twice/],
  ])('refuses %j', (spec, message) => {
    expect(() => parsePartitionSpec(spec)).toThrow(InvalidArgumentError);
    expect(() => parsePartitionSpec(spec)).toThrow(message);
  });
});
