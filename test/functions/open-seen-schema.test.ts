/**
 * A function opening its table at the schema its commit messages' writers found newest
 * (lib/aws/tables.ts openTable with `seen`, functions/commit.ts): the view is never older than a
 * warm container's, i.e. at least the newest schema of a minute before the open, and the open
 * skips the catalog only when a writer's lookup is under a minute old. Randomized (seed printed):
 * a table altered at random times, messages from writers that looked at random times before the
 * open (each carrying the schema newest at its look), some without a time (older writers).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openCatalog } from '../../lib/catalog/open-catalog.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { alterTable } from '../../lib/table/alter.js';
import type { CommitMessage } from '../../lib/table/commit-message.js';
import { rng, testSeed } from '../helpers/random.js';

const MINUTE = 60_000;
const NOW = Date.UTC(2026, 11, 7, 12);

/** A commit message of schema `schemaId`, from a writer that looked at `seenAt` (or did not say). */
function message(schemaId: number, seenAt: number | undefined): CommitMessage {
  return {
    table: 'db.t',
    schemaId,
    commitIdentifier: `m-${schemaId}-${seenAt}`,
    batch: { rowCount: 0, newFiles: [], changelogFiles: [] },
    ...(seenAt === undefined ? {} : { schemaSeenAt: seenAt }),
  };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('openTable at the schema a commit message names', () => {
  it('never opens a schema older than the newest of a minute before, and skips the catalog only for a look under a minute old', async () => {
    // Prepare: 5 schemas, created at random times in the 3 minutes before NOW
    const seed = testSeed('open-seen-schema');
    const r = rng(seed);
    const warehouse = join(mkdtempSync(join(tmpdir(), 'varve-seen-schema-')), 'wh');
    const field = parseSchemaText('x STRING')[0];
    let table = await openCatalog(warehouse).createTable('db.t', {
      fields: parseSchemaText('id BIGINT, v STRING'),
      primaryKeys: ['id'],
    });
    const createdAt = [NOW - 4 * MINUTE];
    for (let i = 1; i <= 4; i++) {
      createdAt.push(NOW - 3 * MINUTE + r.int(0, 3 * MINUTE - 1));
      table = (await alterTable(table, [{ kind: 'add-column', name: `c${i}`, type: field.type }])).table;
    }
    createdAt.sort((a, b) => a - b);
    const newestAt = (t: number) => createdAt.filter((c) => c <= t).length - 1;
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(NOW);

    for (let trial = 0; trial < 40; trial++) {
      const looks = Array.from({ length: r.int(1, 4) }, () => (r.chance(0.2) ? undefined : NOW - r.int(0, 3 * MINUTE)));
      const messages = looks.map((t) => message(newestAt(t ?? NOW - 3 * MINUTE), t));
      // Each trial opens in a new container: the modules loaded again, their table cache empty
      vi.resetModules();
      const tables = await import('../../lib/aws/tables.js');

      // Act
      const opened = await tables.openTable(
        { VARVE_WAREHOUSE: warehouse, VARVE_TABLE: 'db.t' },
        'commit',
        undefined,
        tables.newestSeenSchema(messages),
      );

      // Assess
      const where = `seed ${seed}, trial ${trial}, looks ${JSON.stringify(looks.map((t) => t && NOW - t))}`;
      expect(opened.schema.id, where).toBeGreaterThanOrEqual(newestAt(NOW - MINUTE));
      const young = looks.filter((t): t is number => t !== undefined && NOW - t < MINUTE);
      if (young.length > 0) {
        const named = Math.max(...messages.filter((m) => m.schemaSeenAt !== undefined).map((m) => m.schemaId));
        expect(opened.schema.id, where).toBe(named);
      } else {
        expect(opened.schema.id, where).toBe(4);
      }
    }
  });
});
