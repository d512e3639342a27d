import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError, InvalidKeyError } from '../../lib/errors.js';
import { LocalStore } from '../../lib/store/local-store.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { fromUtf8, utf8 } from '../../lib/store/object-store.js';
import { forgetMemoryStores, openStore } from '../../lib/store/open-store.js';
import { S3Store } from '../../lib/store/s3-store.js';

const scratch = mkdtempSync(join(tmpdir(), 'varve-open-store-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('openStore', () => {
  it('opens s3://bucket/prefix as an S3Store', () => {
    const store = openStore('s3://my-bucket/warehouse/prod/');

    expect(store).toBeInstanceOf(S3Store);
    expect(store).toMatchObject({
      bucket: 'my-bucket',
      prefix: 'warehouse/prod',
      uri: 's3://my-bucket/warehouse/prod',
    });
    expect(openStore('s3://my-bucket')).toMatchObject({ bucket: 'my-bucket', prefix: '' });
  });

  it('opens file:// URIs and plain paths as a LocalStore, creating the folder', () => {
    const plain = join(scratch, 'plain', 'nested wh');
    const viaFile = join(scratch, 'via file', 'ünï');

    const a = openStore(plain);
    const b = openStore(`file://${viaFile}`);
    const c = openStore(pathToFileURL(viaFile).href); // percent-encoded form

    expect(a).toBeInstanceOf(LocalStore);
    expect((a as LocalStore).root).toBe(plain);
    expect(statSync(plain).isDirectory()).toBe(true);
    expect((b as LocalStore).root).toBe(viaFile);
    expect((c as LocalStore).root).toBe(viaFile);
    expect(statSync(viaFile).isDirectory()).toBe(true);
  });

  it('resolves a relative path against the working directory', () => {
    const relativePath = relative(process.cwd(), join(scratch, 'relative wh'));

    const store = openStore(relativePath) as LocalStore;

    expect(store.root).toBe(join(scratch, 'relative wh'));
    expect(statSync(store.root).isDirectory()).toBe(true);
  });

  it('gives the same MemoryStore for the same memory:// name', async () => {
    forgetMemoryStores();
    const a = openStore('memory://shared');
    await a.put('k', utf8('v'));

    const b = openStore('memory://shared');
    const other = openStore('memory://other');

    expect(b).toBe(a);
    expect(a).toBeInstanceOf(MemoryStore);
    expect(a.uri).toBe('memory://shared');
    expect(fromUtf8((await b.get('k')).body)).toBe('v');
    expect(other).not.toBe(a);
    forgetMemoryStores();
    expect(openStore('memory://shared')).not.toBe(a);
  });

  it('refuses bad URIs and says which forms are accepted', () => {
    const file = join(scratch, 'a-file');
    writeFileSync(file, 'x');
    for (const uri of ['', '   ', 'gs://bucket/x', 's3://', 's3:bucket', 'memory://', 'file://relative/path', file]) {
      expect(() => openStore(uri), uri).toThrow(InvalidArgumentError);
    }
    expect(() => openStore('gs://bucket')).toThrow(/s3:\/\/bucket\[\/prefix\].*file:\/\/\/.*memory:\/\/name/);
    expect(() => openStore('s3://bucket/a/../b')).toThrow(InvalidKeyError);
  });
});
