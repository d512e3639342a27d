import { describe, expect, it } from 'vitest';
import { CorruptMetadataError } from '../../lib/errors.js';
import { danglingDeletes, fileIdentity, mergeEntries } from '../../lib/manifest/file-entries.js';
import { entry } from './factories.js';

describe('mergeEntries', () => {
  it('cancels a DELETE against the ADD of the same identity', () => {
    // Prepare
    const entries = [entry('ADD', 'a'), entry('ADD', 'b'), entry('DELETE', 'a')];
    // Act
    const merged = mergeEntries(entries);
    // Assess
    expect(merged.map((e) => `${e.kind} ${e.file.fileName}`)).toEqual(['ADD b']);
  });

  it('keeps a DELETE of an absent identity as a dangling delete', () => {
    const merged = mergeEntries([entry('ADD', 'a'), entry('DELETE', 'x')]);
    expect(danglingDeletes(merged).map((e) => e.file.fileName)).toEqual(['x']);
  });

  it('rejects an ADD of an identity already present', () => {
    expect(() => mergeEntries([entry('ADD', 'a'), entry('ADD', 'a')], 'manifest-1')).toThrow(CorruptMetadataError);
    expect(() => mergeEntries([entry('ADD', 'a'), entry('ADD', 'a')], 'manifest-1')).toThrow(/added twice.*manifest-1/);
  });

  it('treats partition, bucket and level as part of the identity', () => {
    // A level upgrade is DELETE(L0) + ADD(L1) of the same file name.
    const merged = mergeEntries([
      entry('ADD', 'a', { level: 0 }),
      entry('DELETE', 'a', { level: 0 }),
      entry('ADD', 'a', { level: 1 }),
      entry('ADD', 'a', {}, { bucket: 1 }),
      entry('ADD', 'a', {}, { partition: 'dt=1' }),
    ]);
    expect(merged).toHaveLength(3);
    expect(new Set(merged.map(fileIdentity)).size).toBe(3);
  });

  it('does not confuse identities whose parts contain separators', () => {
    const x = entry('ADD', 'b', {}, { partition: 'p=a' });
    const y = entry('ADD', 'a","b', {}, { partition: 'p' });
    expect(fileIdentity(x)).not.toBe(fileIdentity(y));
  });
});
