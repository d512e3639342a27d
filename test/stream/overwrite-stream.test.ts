/** streaming-read-overwrite on an append table: no key pairs rows, so an overwrite streams -D of every removed row, then +I of every written one. */
import { describe, expect, it } from 'vitest';
import { FolderCatalog } from '../../lib/catalog/folder-catalog.js';
import { parseSchemaText } from '../../lib/schema/parse.js';
import { MemoryStore } from '../../lib/store/memory-store.js';
import { changesOf } from '../../lib/stream/sinks.js';
import { readSplit } from '../../lib/stream/split.js';
import { StreamScan } from '../../lib/stream/stream-scan.js';
import { batchOf } from './fixtures.js';

describe('streaming-read-overwrite on an append table', () => {
  it('streams an overwrite as -D of the rows it removed, then +I of the rows it wrote', async () => {
    const table = await new FolderCatalog(new MemoryStore()).createTable('db.log', {
      fields: parseSchemaText('msg STRING'),
      primaryKeys: [],
      options: { 'streaming-read-overwrite': 'true' },
    });
    await table.write([{ msg: 'a' }, { msg: 'b' }]);
    await table.overwrite([{ msg: 'c' }]);
    const scan = new StreamScan(table, { mode: 'earliest' });
    const seen: string[] = [];
    for (let plan = await scan.plan(); plan; plan = await scan.plan()) {
      expect(plan.overwriteSkipped).toBeUndefined();
      for (const split of plan.splits) {
        const data = await readSplit(scan.table, split);
        for (const c of changesOf(batchOf(scan.table, split.snapshotId, split.partition, split.bucket, data)))
          seen.push(`${c.snapshot} ${c.kind} ${String(c.row.msg)}`);
      }
    }
    expect(seen).toEqual(['1 +I a', '1 +I b', '2 -D a', '2 -D b', '2 +I c']);
  });
});
