import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../lib/errors.js';
import {
  bucketOf,
  bucketOfInt32,
  bucketOfInt64Words,
  encodeBucketKey,
  murmurHash3x86_32,
} from '../../lib/schema/bucket.js';
import { parseSchemaText, parseTypeText } from '../../lib/schema/parse.js';
import type { DataType, Value } from '../../lib/schema/types.js';
import { fromJsonValue } from '../../lib/schema/values.js';
import { rng, testSeed } from '../helpers/random.js';
import { ALL_TYPES, randomValue } from './values-random.js';

interface Golden {
  name: string;
  key: Array<{ type: string; value: string | number | boolean | null }>;
  hex: string;
  hash: number;
  buckets: Record<string, number>;
}

/** Written once by fixtures/bucket-golden.py, an independent Python implementation of docs/BUCKETING.md. */
const GOLDEN: Golden[] = JSON.parse(readFileSync(new URL('./fixtures/bucket-golden.json', import.meta.url), 'utf8'));

const utf8 = (s: string) => new TextEncoder().encode(s);
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const bigint: DataType = { root: 'BIGINT', nullable: false };

describe('murmurHash3x86_32', () => {
  // The reference test vectors of MurmurHash3_x86_32 (SMHasher), checked against the C implementation.
  it.each([
    ['', 0, 0x00000000],
    ['', 1, 0x514e28b7],
    ['', 0xffffffff, 0x81f16f39],
    ['\0\0\0\0', 0, 0x2362f9de],
    ['aaaa', 0x9747b28c, 0x5a97808a],
    ['aaa', 0x9747b28c, 0x283e0130],
    ['aa', 0x9747b28c, 0x5d211726],
    ['a', 0x9747b28c, 0x7fa09ea6],
    ['abcd', 0x9747b28c, 0xf0478627],
    ['abc', 0x9747b28c, 0xc84a62dd],
    ['ab', 0x9747b28c, 0x74875592],
    ['Hello, world!', 0x9747b28c, 0x24884cba],
    ['ππππππππ', 0x9747b28c, 0xd58063c1],
    ['abc', 0, 0xb3dd93fa],
    ['abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq', 0, 0xee925b90],
    ['The quick brown fox jumps over the lazy dog', 0x9747b28c, 0x2fa826cd],
  ])('hashes %j with seed %i', (text, seed, expected) => {
    expect(murmurHash3x86_32(utf8(text), seed)).toBe(expected);
  });

  it.each([
    [[0x21, 0x43, 0x65, 0x87], 0, 0xf55b516b],
    [[0x21, 0x43, 0x65, 0x87], 0x5082edee, 0x2362f9de],
    [[0x21, 0x43, 0x65], 0, 0x7e4a8634],
    [[0x21, 0x43], 0, 0xa0f7b07a],
    [[0x21], 0, 0x72661cf4],
    [[0xff, 0xff, 0xff, 0xff], 0, 0x76293b50],
    [[0, 0, 0], 0, 0x85f0b427],
    [[0, 0], 0, 0x30f4c306],
    [[0], 0, 0x514e28b7],
  ])('hashes bytes %j with seed %i', (bytes, seed, expected) => {
    expect(murmurHash3x86_32(new Uint8Array(bytes), seed)).toBe(expected);
  });

  it('hashes only the first `length` bytes when given', () => {
    expect(murmurHash3x86_32(utf8('abcXYZ'), 0, 3)).toBe(0xb3dd93fa);
  });
});

describe('bucketOf golden vectors (frozen: a change here moves keys between buckets)', () => {
  it.each(GOLDEN.map((g) => [g.name, g] as const))('%s', (_, g) => {
    // Prepare
    const types = g.key.map((k) => parseTypeText(k.type, 'golden').type);
    const values = g.key.map((k, i) => fromJsonValue(types[i], k.value));

    // Act
    const bytes = encodeBucketKey(types, values);

    // Assess
    expect(hex(bytes)).toBe(g.hex);
    expect(murmurHash3x86_32(bytes, 42)).toBe(g.hash);
    for (const [n, bucket] of Object.entries(g.buckets))
      expect(bucketOf(types, values, Number(n)), `n=${n}`).toBe(bucket);
  });
});

describe('docs/BUCKETING.md', () => {
  it('shows worked examples the code reproduces', () => {
    const doc = readFileSync(new URL('../../docs/BUCKETING.md', import.meta.url), 'utf8');
    const [s, b, dec, day] = parseSchemaText('s STRING, b BIGINT, d DECIMAL(10,2), day DATE').map((f) => f.type);
    const examples: Array<[string, DataType[], Value[]]> = [
      ['BIGINT `42`', [b], [42n]],
      ['DATE `2024-01-01` (19723)', [day], [19723]],
      ['DECIMAL(10,2) `12.50`', [dec], ['12.50']],
      ['STRING NULL', [s], [null]],
      ['(STRING `eu`, BIGINT `1001`)', [s, b], ['eu', 1001n]],
    ];
    for (const [label, types, values] of examples) {
      const hash = murmurHash3x86_32(encodeBucketKey(types, values), 42).toString(16).toUpperCase().padStart(8, '0');
      const tail = `| \`0x${hash}\` | ${bucketOf(types, values, 16)} | ${bucketOf(types, values, 1000)} |`;
      const row = doc.split('\n').find((l) => l.startsWith(`| ${label} |`));
      expect(row, label).toBeDefined();
      expect(row!.endsWith(tail), `${label}: ${row} should end with ${tail}`).toBe(true);
    }
  });
});

describe('bucketOf', () => {
  it('gives the fast one-column paths the same answer as the byte encoding', () => {
    const seed = testSeed('schema.bucket');
    const r = rng(seed);
    const fixed = ALL_TYPES.filter((f) =>
      ['TINYINT', 'SMALLINT', 'INT', 'DATE', 'BIGINT', 'TIMESTAMP'].includes(f.type.root),
    );
    for (let k = 0; k < 2000; k++) {
      const f = r.pick(fixed);
      const v = randomValue(r, f);
      const n = r.int(1, 1000);
      const viaBytes = murmurHash3x86_32(encodeBucketKey([f.type], [v]), 42) | 0;
      expect(bucketOf([f.type], [v], n), `${f.type.root} ${String(v)} n=${n} seed ${seed}`).toBe(
        ((viaBytes % n) + n) % n,
      );
    }
  });

  it('treats numbers and bigints of the same BIGINT value alike', () => {
    for (const v of [0, 1, -1, 2 ** 40, -(2 ** 40) - 3, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]) {
      expect(bucketOf([bigint], [v], 97)).toBe(bucketOf([bigint], [BigInt(v)], 97));
      expect(hex(encodeBucketKey([bigint], [v]))).toBe(hex(encodeBucketKey([bigint], [BigInt(v)])));
    }
  });

  it('maps equal floats (-0 and 0, every NaN) to one bucket', () => {
    const d: DataType = { root: 'DOUBLE', nullable: true };
    expect(bucketOf([d], [-0], 1000)).toBe(bucketOf([d], [0], 1000));
    const otherNaN = new Float64Array(new BigUint64Array([0x7ff0000000000001n]).buffer)[0];
    expect(bucketOf([d], [otherNaN], 1000)).toBe(bucketOf([d], [NaN], 1000));
  });

  it('spreads sequential keys evenly over the buckets', () => {
    // Prepare
    const n = 16;
    const rows = 64_000;
    const counts = new Array<number>(n).fill(0);
    const [id, name] = parseSchemaText('id BIGINT, name STRING');

    // Act
    for (let i = 0; i < rows; i++) counts[bucketOf([id.type], [BigInt(i)], n)]++;
    const names = new Array<number>(n).fill(0);
    for (let i = 0; i < rows; i++) names[bucketOf([name.type], [`customer-${i}`], n)]++;

    // Assess: chi-square with 15 degrees of freedom; 37.7 is the 0.1 % critical value.
    for (const c of [counts, names]) {
      const expected = rows / n;
      const chi2 = c.reduce((s, x) => s + (x - expected) ** 2 / expected, 0);
      expect(chi2).toBeLessThan(37.7);
    }
  });

  it('reuses its scratch buffer across long and short keys', () => {
    // The first key above 1 KiB in this file: it makes the scratch buffer grow mid-encoding.
    const s: DataType = { root: 'STRING', nullable: true };
    const long = 'x'.repeat(5000);
    const before = bucketOf([s], ['short'], 1000);
    expect(bucketOf([s], [long], 1000)).toBe(
      (((murmurHash3x86_32(encodeBucketKey([s], [long]), 42) | 0) % 1000) + 1000) % 1000,
    );
    expect(bucketOf([s], ['short'], 1000)).toBe(before);
  });

  it('refuses bad bucket counts and values of the wrong kind', () => {
    expect(() => bucketOf([bigint], [1n], 0)).toThrow(InvalidArgumentError);
    expect(() => bucketOf([bigint], [1n], 2.5)).toThrow(/integer ≥ 1/);
    expect(() => bucketOf([bigint], [], 4)).toThrow(/1 types but 0 values/);
    expect(() => bucketOf([{ root: 'INT', nullable: false }], [1.5 as Value], 4)).toThrow(
      /does not fit bucket-key type INT/,
    );
    expect(() => bucketOf([{ root: 'STRING', nullable: false }], [7], 4)).toThrow(InvalidArgumentError);
    expect(() => bucketOf([{ root: 'DECIMAL', nullable: false, precision: 5, scale: 1 }], ['1.25'], 4)).toThrow(
      InvalidArgumentError,
    );
  });
});

describe('bucketOfInt64Words / bucketOfInt32 (a writer hashing a key column)', () => {
  it('give the bucket bucketOf gives for the same value', () => {
    const words = new Int32Array(2);
    const view = new BigInt64Array(words.buffer);
    const bigints = [0n, 1n, -1n, 42n, 2n ** 31n, -(2n ** 31n) - 1n, 2n ** 62n + 12345n, -(2n ** 63n), 2n ** 63n - 1n];
    for (let i = 0; i < 200; i++) bigints.push(BigInt(i * 7919) * 1_000_003n - 500_000_000n);
    for (const v of bigints) {
      view[0] = v;
      for (const buckets of [1, 4, 7, 128]) {
        expect(bucketOfInt64Words(words[0], words[1], buckets), `${v} / ${buckets}`).toBe(
          bucketOf([parseTypeText('BIGINT NOT NULL', 'k').type], [v], buckets),
        );
      }
    }
    for (const v of [0, 1, -1, 127, -128, 32767, -32768, 2 ** 31 - 1, -(2 ** 31), 123456]) {
      for (const root of ['INT', 'SMALLINT', 'TINYINT'] as const) {
        expect(bucketOfInt32(v, 5), `${root} ${v}`).toBe(
          bucketOf([parseTypeText(`${root} NOT NULL`, 'k').type], [v], 5),
        );
      }
    }
  });
});
