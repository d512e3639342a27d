/**
 * The Node versions varve runs on: node:zlib's crc32 (data file checksums) is in Node 20.15+ and
 * 22.2+, never in 21. package.json's engines says so, and the CLI launcher stops an older Node
 * with one line saying what to install, before it loads anything of varve.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ESM script of bin/, without types
import { SUPPORTED_NODE, unsupportedNode } from '../../bin/node-version.mjs';

const launcher = fileURLToPath(new URL('../../bin/varve.mjs', import.meta.url));

describe('the supported Node versions', () => {
  it('are those with node:zlib crc32, and package.json engines names the same range', () => {
    for (const ok of ['20.15.0', '20.20.2', '22.2.0', '22.11.0', '24.1.0'])
      expect(unsupportedNode(ok), ok).toBeUndefined();
    for (const old of ['18.20.4', '20.0.0', '20.14.1', '21.7.3', '22.1.0'])
      expect(unsupportedNode(old), old).toMatch(
        new RegExp(`this is Node ${old.replace(/\./g, '\\.')}, whose node:zlib has no crc32`),
      );
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    expect(pkg.engines.node).toBe(SUPPORTED_NODE);
  });

  it('an older Node stops at the CLI start with one clear line and exit code 1, running nothing', () => {
    // The version a Node 20.14 would report, set before the launcher runs.
    const asOld = 'data:text/javascript,Object.defineProperty(process.versions,"node",{value:"20.14.0"})';
    const r = spawnSync(process.execPath, ['--import', asOld, launcher, '--help'], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`varve: ${unsupportedNode('20.14.0')}\n`);
    expect(r.stderr).toContain('Install a current Node 22 LTS (or 20.15+)');
  });
});
