/**
 * `varve demo`: the whole system on a local warehouse in a few seconds. A primary-key table with
 * two buckets and the lookup changelog producer, a streaming consumer printing each change as it
 * arrives (with the time since the start), then an insert, an update, a compaction, a delete, the
 * snapshots this made, a consumer restart that resumes exactly, and expiry held back by the
 * consumer.
 */
import type { Catalog } from '../catalog/catalog';
import { LocalRuntime } from '../runtime/local-runtime';
import { parseSchemaText } from '../schema/parse';
import { RowKind, type Row } from '../schema/types';
import { readConsumer } from '../stream/consumer';
import { callbackSink, changeToJsonLine, type Change } from '../stream/sinks';
import type { Table } from '../table/table';
import { loadExpiry } from '../runtime/expiry-loader';

type Out = (text: string) => void;

const CONSUMER = 'demo';

/** Runs the demo against `catalog`'s warehouse, printing to `out`. */
export async function runDemo(catalog: Catalog, name: string, out: Out): Promise<void> {
  const started = performance.now();
  const stamp = () => `[${String(Math.round(performance.now() - started)).padStart(5)} ms]`;
  const say = (text = '') => out(`${text}\n`);
  const step = (text: string) => say(`${stamp()} ${text}`);

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
  say('FIFO queue grouped by bucket; a reader hands each split\'s changes to a sink that prints them here');
  say();

  const sink = callbackSink((changes: Change[]) => {
    for (const c of changes) step(`   consumer <- ${c.kind} ${rowText(table, c)}   (snapshot ${c.snapshot}, bucket ${c.bucket})`);
  });
  let runtime = await startRuntime(table, sink);
  const write = async (what: string, rows: Row[], kinds?: Array<0 | 3>) => {
    const r = await table.write(rows, { kinds });
    step(`${what.padEnd(44)} -> snapshot ${r.snapshot?.id} (APPEND)`);
    await runtime.idle();
  };

  say('1. insert three rows: each bucket\'s compaction turns the write into changelog (+I)');
  await write('write 1 apple×3, 2 pear×1, 3 fig×7', [row(1, 'apple', 3), row(2, 'pear', 1), row(3, 'fig', 7)]);
  say('2. update one row: the lookup producer finds the old value (-U) and the new one (+U)');
  await write('write 2 pear×5', [row(2, 'pear', 5)]);
  say('3. compact everything: files are rewritten, no row changes, so the consumer gets nothing');
  const compacted = await runtime.compact(table, { full: true });
  step(`full compaction -> ${compacted.snapshots.length ? `snapshot(s) ${compacted.snapshots.join(', ')} (COMPACT)` : 'nothing to do'}`);
  await runtime.idle();
  say('4. delete one row (-D)');
  await write('delete 3', [{ id: 3n, item: null, qty: null }], [RowKind.DELETE]);

  say();
  say('the snapshots these made (APPEND = a write, COMPACT = a compaction; lookup compactions carry changelog):');
  await printSnapshots(table, say);

  say();
  say('5. restart: the consumer stops; its position is a file in the table, not in memory');
  await runtime.stop();
  const position = await readConsumer(table.store, table.path, CONSUMER);
  step(`consumer stopped, consumer/consumer-${CONSUMER} says nextSnapshot = ${position?.nextSnapshot}`);
  const down = await table.write([row(4, 'kiwi', 2)]);
  step(`while it is down: write 4 kiwi×2 -> snapshot ${down.snapshot?.id}`);
  runtime = await startRuntime(table, sink);
  step('a new runtime starts the consumer: it resumes there, repeating nothing');
  await runtime.idle();

  say();
  say('6. expiry never removes what a consumer still needs');
  await runtime.stop();
  const held = await readConsumer(table.store, table.path, CONSUMER);
  for (const [id, item] of [[5, 'plum'], [6, 'lime']] as const) {
    const r = await table.write([row(id, item, 1)]);
    step(`consumer stopped; write ${id} ${item}×1 -> snapshot ${r.snapshot?.id}`);
  }
  const expire = await loadExpiry();
  if (!expire) {
    say('   (snapshot expiry is not part of this build: lib/maintenance/expire-snapshots is missing)');
  } else {
    await expire(table, { retainMin: 1, retainMax: 1, olderThanMs: 0 });
    step(
      `expire, keeping at most 1 snapshot: earliest is now ${await table.snapshots.earliestId()} ` +
        `(the consumer needs ${held?.nextSnapshot} and later), latest ${await table.snapshots.latestId()}`,
    );
  }
  runtime = await startRuntime(table, sink);
  step('the consumer comes back and catches up on everything it missed:');
  await runtime.idle();
  await runtime.stop();
  if (expire) {
    await expire(table, { retainMin: 1, retainMax: 1, olderThanMs: 0 });
    step(`expire again, now that it has read them: earliest is ${await table.snapshots.earliestId()}`);
  }
  say();
  say(`try: varve tail ${table.name} --from earliest   ·   varve sys ${table.name} consumers   ·   varve read ${table.name}`);
}

async function startRuntime(table: Table, sink: ReturnType<typeof callbackSink>): Promise<LocalRuntime> {
  // Compaction only where the demo asks for it; writers compact inline (lookup: after every write).
  const runtime = new LocalRuntime({ compactionIntervalMs: 0, expiryIntervalMs: 0, discoveryIntervalMs: 500 });
  await runtime.addConsumer({ table, consumerId: CONSUMER, sink, readers: 1 });
  await runtime.start();
  return runtime;
}

async function printSnapshots(table: Table, say: (t: string) => void): Promise<void> {
  const ids = await table.snapshots.listIds();
  say('   id  kind      rows  changelog rows');
  for (const id of ids) {
    const s = await table.snapshots.read(id);
    say(`   ${String(id).padStart(2)}  ${s.commitKind.padEnd(8)} ${String(s.deltaRecordCount).padStart(5)}  ${String(s.changelogRecordCount ?? 0).padStart(14)}`);
  }
}

function row(id: number, item: string, qty: number): Row {
  return { id: BigInt(id), item, qty };
}

function rowText(table: Table, c: Change): string {
  return JSON.stringify(JSON.parse(changeToJsonLine(table, c)).row);
}
