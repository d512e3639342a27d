/**
 * The deletion-vector-v1 blob and its Puffin file (lib/format/deletion-vector.ts): round trips of
 * random position sets (array and bitmap containers, several containers), every kind of damage
 * refused naming the blob, and a cross-check against the RoaringBitmap Java library (the one
 * Iceberg uses): it reads our bitmaps to the same values, its serialization of them is
 * byte-identical to ours, and its run-optimised serialization (run containers) decodes here.
 * The same three checks run against CRoaring, the C reference implementation (roaring-wasm, an
 * exact devDependency: always there, so an independent reader always checks the format). The
 * Java check needs Java and the library's jar in ~/.m2; without them it says loudly that it
 * skipped.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RoaringBitmap32, roaringLibraryInitialize } from 'roaring-wasm';
import { describe, expect, it } from 'vitest';
import { CorruptMetadataError } from '../../lib/errors.js';
import {
  decodeDeletionVectorBlob,
  decodeRoaring64,
  encodeDeletionVectorBlob,
  encodeRoaring64,
  readPuffinFooter,
  writeDeletionVectorPuffin,
} from '../../lib/format/deletion-vector.js';
import { rng, testSeed, type Rng } from '../helpers/random.js';

/** A random sorted set of positions: sparse, dense (bitmap containers), runs, over several 65,536-blocks. */
function randomPositions(r: Rng): Uint32Array {
  const set = new Set<number>();
  const blocks = r.int(1, 4);
  for (let b = 0; b < blocks; b++) {
    const high = r.pick([0, 1, 2, 7, 300, 65535]) * 65536;
    const shape = r.int(0, 2);
    const n = shape === 0 ? r.int(1, 200) : shape === 1 ? r.int(4000, 9000) : r.int(1, 20);
    for (let i = 0; i < n; i++) {
      if (shape === 2) {
        const start = r.int(0, 60000);
        for (let x = start; x < start + r.int(1, 3000); x++) set.add(high + x);
      } else set.add(high + r.int(0, 65535));
    }
  }
  return Uint32Array.from([...set].sort((a, b) => a - b));
}

describe('deletion-vector-v1 blob', () => {
  it('round-trips random position sets, and an empty one', () => {
    const seed = testSeed('deletion-vector round trip');
    const r = rng(seed);
    expect(decodeDeletionVectorBlob(encodeDeletionVectorBlob(new Uint32Array()))).toEqual(new Uint32Array());
    for (let i = 0; i < 40; i++) {
      const p = randomPositions(r);
      expect(decodeDeletionVectorBlob(encodeDeletionVectorBlob(p)), `seed ${seed} set ${i}`).toEqual(p);
    }
    const edge = Uint32Array.from([0, 1, 65535, 65536, 2 ** 32 - 1]);
    expect(decodeDeletionVectorBlob(encodeDeletionVectorBlob(edge))).toEqual(edge);
  });

  it('is laid out as the Iceberg spec says: length, magic, bitmap, CRC', () => {
    const blob = encodeDeletionVectorBlob(Uint32Array.from([3, 5]));
    const view = new DataView(blob.buffer);
    expect(view.getUint32(0, false)).toBe(blob.length - 8);
    expect([...blob.subarray(4, 8)]).toEqual([0xd1, 0xd3, 0x39, 0x64]);
    // One 32-bit bitmap, key 0, cookie 12346, one array container (key 0, cardinality 2) at offset 16.
    expect(view.getUint32(8, true)).toBe(1);
    expect(view.getUint32(12, true)).toBe(0);
    expect(view.getUint32(16, true)).toBe(0);
    expect(view.getUint32(20, true)).toBe(12346);
    expect(view.getUint32(24, true)).toBe(1);
    expect([view.getUint16(28, true), view.getUint16(30, true), view.getUint32(32, true)]).toEqual([0, 1, 16]);
    expect([view.getUint16(36, true), view.getUint16(38, true)]).toEqual([3, 5]);
  });

  it('refuses damaged blobs, naming them', () => {
    const blob = encodeDeletionVectorBlob(Uint32Array.from([1, 2, 3, 100_000]));
    const flip = (at: number) => {
      const b = blob.slice();
      b[at] ^= 0x40;
      return b;
    };
    expect(() => decodeDeletionVectorBlob(flip(20), 'dv-x.puffin')).toThrow(/dv-x.puffin is damaged: CRC-32/);
    expect(() => decodeDeletionVectorBlob(flip(5), 'b')).toThrow(/magic/);
    expect(() => decodeDeletionVectorBlob(flip(2), 'b')).toThrow(/length field/);
    expect(() => decodeDeletionVectorBlob(blob.subarray(0, blob.length - 3), 'b')).toThrow(CorruptMetadataError);
    expect(() => encodeDeletionVectorBlob(Uint32Array.from([2, 1]))).toThrow(/sorted ascending/);
  });

  it('decodes run containers and several 32-bit bitmaps', () => {
    // Cookie 12347 | (2 containers - 1) << 16, run flags 0b01, headers, no offsets (< 4 containers).
    // Container 0 (key 0): runs 10..14 and 100..101; container 1 (key 5): array 7..11.
    const inner = [
      0x3b, 0x30, 0x01, 0x00, 0x01, 0, 0, 6, 0, 5, 0, 4, 0, 2, 0, 10, 0, 4, 0, 100, 0, 1, 0, 7, 0, 8, 0, 9, 0, 10, 0,
      11, 0,
    ];
    const bytes = new Uint8Array(8 + 4 + inner.length);
    new DataView(bytes.buffer).setUint32(0, 1, true);
    new DataView(bytes.buffer).setUint32(8, 0, true);
    bytes.set(inner, 12);
    const { positions } = decodeRoaring64(bytes, 't');
    expect([...positions]).toEqual([
      10,
      11,
      12,
      13,
      14,
      100,
      101,
      5 * 65536 + 7,
      5 * 65536 + 8,
      5 * 65536 + 9,
      5 * 65536 + 10,
      5 * 65536 + 11,
    ]);
  });
});

describe('Puffin file of deletion vectors', () => {
  it('lists each blob with its offset, length and properties, and the blobs decode', () => {
    const a = Uint32Array.from([0, 7]);
    const b = Uint32Array.from([5000, 5001, 70_000]);
    const { bytes, blobs } = writeDeletionVectorPuffin([
      {
        bytes: encodeDeletionVectorBlob(a),
        properties: { 'referenced-data-file': 'bucket-0/data-a.parquet', cardinality: '2' },
      },
      {
        bytes: encodeDeletionVectorBlob(b),
        properties: { 'referenced-data-file': 'bucket-0/data-b.parquet', cardinality: '3' },
      },
    ]);
    const footer = readPuffinFooter(bytes, 'f.puffin');
    expect(footer).toEqual(blobs);
    expect(footer.map((m) => m.type)).toEqual(['deletion-vector-v1', 'deletion-vector-v1']);
    expect(decodeDeletionVectorBlob(bytes.subarray(footer[1].offset, footer[1].offset + footer[1].length))).toEqual(b);
    const json = JSON.parse(
      new TextDecoder().decode(
        bytes.subarray(
          bytes.length - 12 - new DataView(bytes.buffer).getInt32(bytes.length - 12, true),
          bytes.length - 12,
        ),
      ),
    );
    expect(json.blobs[0]).toMatchObject({ fields: [2147483645], 'snapshot-id': -1, 'sequence-number': -1 });
    const cut = bytes.slice(0, bytes.length - 1);
    expect(() => readPuffinFooter(cut, 'f.puffin')).toThrow(/Puffin file f.puffin is damaged/);
  });
});

const JAR = join(homedir(), '.m2/repository/org/roaringbitmap/RoaringBitmap/1.3.0/RoaringBitmap-1.3.0.jar');
const CHECK = join(dirname(fileURLToPath(import.meta.url)), 'java/RoaringCheck.java');

function javaAvailable(): string | undefined {
  if (spawnSync('java', ['-version'], { stdio: 'ignore' }).status !== 0) return 'no java on PATH';
  if (!existsSync(JAR)) return `RoaringBitmap is not at ${JAR}`;
  return undefined;
}

describe('cross-check with CRoaring (roaring-wasm)', () => {
  it('reads our bitmaps, serializes them to the same bytes, and its run containers read here', async () => {
    await roaringLibraryInitialize();
    const seed = testSeed('deletion-vector CRoaring cross-check');
    const r = rng(seed);
    // Twelve random sets, then one that surely has runs (positions 1,000-4,999 and 70,000-70,099).
    const fixed = Uint32Array.from(
      [...Array(4000).keys()].map((x) => x + 1000).concat([...Array(100).keys()].map((x) => x + 70000)),
    );
    for (let i = 0; i <= 12; i++) {
      const p = i < 12 ? randomPositions(r) : fixed;
      const ours = encodeRoaring64(p).subarray(12);
      const theirs = RoaringBitmap32.deserialize(ours, 'portable');
      try {
        expect(theirs.toUint32Array(), `seed ${seed} set ${i}`).toEqual(p);
        expect(theirs.serialize('portable'), `seed ${seed} set ${i}: byte-identical`).toEqual(ours);
        if (theirs.runOptimize() === false) expect(i, `seed ${seed}: the fixed set has runs`).toBeLessThan(12);
        const runs = theirs.serialize('portable');
        const wrapped = new Uint8Array(12 + runs.length);
        new DataView(wrapped.buffer).setUint32(0, 1, true);
        wrapped.set(runs, 12);
        expect(decodeRoaring64(wrapped, 'CRoaring').positions, `seed ${seed} set ${i}: run containers`).toEqual(p);
      } finally {
        theirs.dispose();
      }
    }
  });
});

describe('cross-check with the RoaringBitmap Java library', () => {
  const missing = javaAvailable();
  if (missing !== undefined) console.warn(`[deletion-vector] SKIPPED the Java Roaring cross-check: ${missing}`);
  it.skipIf(missing !== undefined)(
    'reads our bitmaps, serializes them to the same bytes, and its run containers read here',
    () => {
      const seed = testSeed('deletion-vector java cross-check');
      const r = rng(seed);
      const dir = mkdtempSync(join(tmpdir(), 'varve-roaring-'));
      try {
        for (let i = 0; i < 6; i++) {
          const p = randomPositions(r);
          const ours = encodeRoaring64(p);
          writeFileSync(join(dir, 'in'), ours.subarray(12));
          const out = execFileSync(
            'java',
            ['-cp', JAR, CHECK, join(dir, 'in'), join(dir, 'plain'), join(dir, 'runs')],
            { encoding: 'utf8', maxBuffer: 1 << 28 },
          );
          expect(out.trim(), `seed ${seed} set ${i}`).toBe([...p].join(','));
          expect(new Uint8Array(readFileSync(join(dir, 'plain'))), `seed ${seed} set ${i}: byte-identical`).toEqual(
            ours.subarray(12),
          );
          const runs = readFileSync(join(dir, 'runs'));
          const wrapped = new Uint8Array(12 + runs.length);
          new DataView(wrapped.buffer).setUint32(0, 1, true);
          wrapped.set(runs, 12);
          expect(decodeRoaring64(wrapped, 'java').positions, `seed ${seed} set ${i}: run containers`).toEqual(p);
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    120_000,
  );
});
