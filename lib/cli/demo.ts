/**
 * `varve demo`: the whole system on a local warehouse in a few seconds. A primary-key table with
 * two buckets and the lookup changelog producer, a streaming consumer printing each change as it
 * arrives (with its delivery latency: commit to arrival), then an insert, an update, a compaction, a delete, the
 * snapshots this made, a consumer restart that resumes exactly, and expiry held back by the
 * consumer.
 */
import type { Catalog } from '../catalog/catalog.js';
import { LocalRuntime } from '../runtime/local-runtime.js';
import { parseSchemaText } from '../schema/parse.js';
import { RowKind, type Row } from '../schema/types.js';
import { readConsumer } from '../snapshot/consumer.js';
import { callbackSink, displayRow, type Change } from '../stream/sinks.js';
import type { Table } from '../table/table.js';
import { expireSnapshots } from '../maintenance/expire-snapshots.js';
import { EXPIRY_FLOOR_MS } from '../snapshot/commit-steps.js';

type Out = (text: string) => void;

const CONSUMER = 'demo';

/** The demo's table, its consumer's sink, the running runtime, and how it prints. */
interface Demo {
  table: Table;
  sink: ReturnType<typeof callbackSink>;
  runtime: LocalRuntime;
  say: (text?: string) => void;
  /** A line of the script (no delivery latency: the column is blank). */
  step: (text: string) => void;
}

const BLANK = ' '.repeat(10);

/** Runs the demo against `catalog`'s warehouse, printing to `out`. */
export async function runDemo(catalog: Catalog, name: string, out: Out): Promise<void> {
  const say = (text = '') => out(`${text}\n`);
  if (await catalog.tableExists(name)) await catalog.dropTable(name);
  const table = await catalog.createTable(name, {
    fields: parseSchemaText('id BIGINT, item STRING, qty INT'),
    primaryKeys: ['id'],
    options: { bucket: '2', 'changelog-producer': 'lookup' },
  });
  say(`varve demo — a streaming primary-key table in ${catalog.store.uri} (no AWS account involved)`);
  say();
  say(`table ${table.name} (id BIGINT, item STRING, qty INT), primary key id, 2 buckets, changelog-producer = lookup`);
  say(`consumer "${CONSUMER}": after every commit, discovery plans the new snapshot's splits (one per bucket) into a`);
  say("FIFO queue grouped by bucket; a reader hands each split's changes to a sink that prints them here, each with");
  say('[ms]: the time from the commit of its snapshot to its arrival at the sink (its delivery latency)');
  say();
  const sink = deliverySink(table, say);
  const demo: Demo = {
    table,
    sink,
    runtime: await startRuntime(table, sink),
    say,
    step: (text) => say(`${BLANK} ${text}`),
  };
  await changeRows(demo);
  say();
  say(
    'the snapshots these made: each write is followed by the compaction of its level-0 files, which carries its changelog',
  );
  await printSnapshots(table, say);
  await restart(demo);
  await expiryHeldBack(demo);
  say();
  say(`next: varve tail ${table.name} --follow   ·   varve sys ${table.name} consumers   ·   varve read ${table.name}`);
}

/**
 * The consumer's sink: prints each change with its delivery latency, the time from the commit of
 * its snapshot (the snapshot file's commit time) to its arrival here.
 */
function deliverySink(table: Table, say: (text: string) => void): ReturnType<typeof callbackSink> {
  return callbackSink(async (changes: Change[]) => {
    const arrived = Date.now();
    for (const c of changes) {
      const latency = Math.max(0, arrived - (await table.snapshots.read(c.snapshot)).timeMillis);
      say(
        `[${String(latency).padStart(5)} ms]    consumer <- ${c.kind} ${rowText(table, c)}   (snapshot ${c.snapshot}, bucket ${c.bucket})`,
      );
    }
  });
}

/** Steps 1-4: inserts, an update, a compaction that streams nothing, a delete. */
async function changeRows(demo: Demo): Promise<void> {
  const { table, say, step } = demo;
  const write = async (what: string, rows: Row[], kinds?: Array<0 | 3>) => {
    const r = await table.write(rows, { kinds });
    step(`${what.padEnd(44)} -> snapshot ${r.snapshot?.id} (APPEND)`);
    await demo.runtime.idle();
  };
  say("1. insert three rows: each bucket's compaction turns the write into changelog (+I)");
  await write('write 1 apple×3, 8 pear×1, 9 fig×7', [row(1, 'apple', 3), row(8, 'pear', 1), row(9, 'fig', 7)]);
  say('2. update one row: the lookup producer finds the old value (-U) and the new one (+U)');
  await write('write 8 pear×5', [row(8, 'pear', 5)]);
  say('3. compact everything: files are rewritten, no row changes, so the consumer gets nothing');
  const compacted = await demo.runtime.compact(table, { full: true });
  step(
    `full compaction -> ${compacted.snapshots.length ? `snapshot(s) ${compacted.snapshots.join(', ')} (COMPACT)` : 'nothing to do'}`,
  );
  await demo.runtime.idle();
  step('   (nothing reached the consumer)');
  say('4. delete one row (-D)');
  await write('delete 1', [{ id: 1n, item: null, qty: null }], [RowKind.DELETE]);
}

/** Step 5: the consumer stops, a write lands meanwhile, a new runtime resumes at its position. */
async function restart(demo: Demo): Promise<void> {
  const { table, say, step } = demo;
  say();
  say('5. restart: the consumer stops; its position is a file in the table, not in memory');
  await demo.runtime.stop();
  const position = await readConsumer(table.store, table.path, CONSUMER);
  step(`consumer stopped, consumer/consumer-${CONSUMER} says nextSnapshot = ${position?.nextSnapshot}`);
  const down = await table.write([row(2, 'kiwi', 2)]);
  step(`while it is down: write 2 kiwi×2 -> snapshot ${down.snapshot?.id}`);
  step(
    'a new runtime starts the consumer: it resumes there, repeating nothing (the latency includes the time it was down)',
  );
  demo.runtime = await startRuntime(table, demo.sink);
  await demo.runtime.idle();
}

/** Step 6: expiry keeps what the stopped consumer still needs, and expires it once read. */
async function expiryHeldBack(demo: Demo): Promise<void> {
  const { table, say, step } = demo;
  say();
  say('6. expiry never removes what a consumer still needs');
  await demo.runtime.stop();
  const held = await readConsumer(table.store, table.path, CONSUMER);
  step(`consumer stopped at nextSnapshot ${held?.nextSnapshot}`);
  for (const [id, item] of [
    [12, 'plum'],
    [3, 'lime'],
  ] as const) {
    const r = await table.write([row(id, item, 1)]);
    step(`write ${id} ${item}×1 -> snapshot ${r.snapshot?.id}`);
  }
  // Expiry never removes a snapshot whose successor is under a minute old (the expiry floor,
  // expiry-range.ts): the demo's runs take their time a minute ahead, as runs a minute later would.
  const minuteLater = () => Date.now() + EXPIRY_FLOOR_MS;
  const held1 = await expireSnapshots(table, { retainMin: 1, retainMax: 1, olderThanMs: 0, now: minuteLater() });
  step(
    `expire, keeping at most 1 snapshot: earliest is now ${held1.earliest} of ${held1.latest} ` +
      `(held by consumer ${held1.heldByConsumer?.id ?? '-'} at nextSnapshot ${held?.nextSnapshot})`,
  );
  step('the consumer comes back and catches up on everything it missed:');
  demo.runtime = await startRuntime(table, demo.sink);
  await demo.runtime.idle();
  await demo.runtime.stop();
  const after = await expireSnapshots(table, { retainMin: 1, retainMax: 1, olderThanMs: 0, now: minuteLater() });
  step(
    `expire again, now that it has read them: earliest is ${after.earliest} (${after.expired.length} more snapshots expired)`,
  );
}

async function startRuntime(table: Table, sink: ReturnType<typeof callbackSink>): Promise<LocalRuntime> {
  // Compaction only where the demo asks for it; writers compact inline (lookup: after every write).
  const runtime = new LocalRuntime({ compactionIntervalMs: 0, expiryIntervalMs: 0, discoveryIntervalMs: 500 });
  await runtime.addConsumer({ table, consumerId: CONSUMER, sink, readers: 1 });
  await runtime.start();
  return runtime;
}

async function printSnapshots(table: Table, say: (t: string) => void): Promise<void> {
  say('   id  kind     what');
  for (const id of await table.snapshots.listIds()) {
    const s = await table.snapshots.read(id);
    const changelog = s.changelogRecordCount ?? 0;
    const what =
      s.commitKind === 'APPEND'
        ? `a write of ${s.deltaRecordCount} record(s)`
        : `a compaction${changelog > 0 ? `, with ${changelog} changelog row(s)` : ', no changelog: nothing to stream'}`;
    say(`   ${String(id).padStart(2)}  ${s.commitKind.padEnd(8)} ${what}`);
  }
}

function row(id: number, item: string, qty: number): Row {
  return { id: BigInt(id), item, qty };
}

function rowText(table: Table, c: Change): string {
  return JSON.stringify(displayRow(table, c));
}
