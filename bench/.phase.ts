import * as arrow from 'apache-arrow';
import { tableArrowSchema, physicalArrowSchema } from '../lib/format/arrow-schema';
import { mergeConfig } from '../lib/mergetree/merge-config';
import { mergeEngineFor } from '../lib/mergetree/merge-function';
import { materializeMerge } from '../lib/mergetree/merge-output';
import { versionsOfTable } from '../lib/mergetree/merge-plan';
import { sortByKey } from '../lib/mergetree/key-order';
import { WriteBuffer } from '../lib/mergetree/write-buffer';
import { gatherRows } from '../lib/format/columns';
const N = 1_000_000;
const schema: any = { version: 1, id: 0, fields: [
 { id: 1, name: 'id', type: { root: 'BIGINT', nullable: false } },
 { id: 2, name: 'qty', type: { root: 'INT', nullable: true } },
 { id: 3, name: 'price', type: { root: 'DOUBLE', nullable: true } },
 { id: 4, name: 'name', type: { root: 'STRING', nullable: true } },
 { id: 5, name: 'note', type: { root: 'STRING', nullable: true } }], highestFieldId: 5, partitionKeys: [], primaryKeys: ['id'], options: {}, timeMillis: 0 };
const enc = new TextEncoder();
function utf8(values: (string|null)[]) { const n = values.length; const parts = values.map(v => enc.encode(v ?? '')); const off = new Int32Array(n+1); for (let i=0;i<n;i++) off[i+1]=off[i]+parts[i].length; const b = new Uint8Array(off[n]); parts.forEach((p,i)=>b.set(p,off[i])); const val = new Uint8Array((n+7)>>3); let nulls=0; values.forEach((v,i)=> v===null? nulls++ : (val[i>>3] |= 1<<(i&7))); return arrow.makeData({ type: new arrow.Utf8(), length: n, nullCount: nulls, nullBitmap: nulls?val:undefined, valueOffsets: off, data: b }); }
const ids = new BigInt64Array(N), qty = new Int32Array(N), price = new Float64Array(N); const names: string[] = [], notes: (string|null)[] = [];
for (let i=0;i<N;i++){ ids[i]=BigInt(Math.floor(Math.random()*N*0.8))*2654435761n; qty[i]=i; price[i]=i/3; names.push(`customer-${Math.floor(Math.random()*1e6)}`); notes.push(Math.random()<0.3?null:`note ${i}`); }
const s = tableArrowSchema(schema);
const children = [arrow.makeData({type:new arrow.Int64(),length:N,nullCount:0,data:ids}), arrow.makeData({type:new arrow.Int32(),length:N,nullCount:0,data:qty}), arrow.makeData({type:new arrow.Float64(),length:N,nullCount:0,data:price}), utf8(names), utf8(notes)];
const input = new arrow.Table(s, new arrow.RecordBatch(s, arrow.makeData({type:new arrow.Struct(s.fields),length:N,nullCount:0,children})));
names.length = 0; notes.length = 0;
(globalThis as any).gc?.();
const t = (l: string, f: () => any) => { const t0 = performance.now(); const r = f(); console.log(l.padEnd(30), (performance.now()-t0).toFixed(0)); return r; };
for (let rep = 0; rep < 3; rep++) {
const b = new WriteBuffer({ schema, merge: mergeConfig(), writeBufferSize: 1<<30, spillable: false });
t('addTable', () => b.addTable(input));
const tbl = (b as any).takePending();
t('sortByKey', () => sortByKey(tbl.table, ['id']));
const v = t('versionsOfTable', () => versionsOfTable(schema, tbl, { keyColumns: ['id'], sequenceFields: [], sequenceDescending: false }));
const eng = mergeEngineFor(mergeConfig());
const res = t('dedup merge', () => eng.merge(v, { rawInput: true, dropRetracts: false }));
t('materialize', () => materializeMerge(v, res, { allInsert: false }));
const agg = mergeEngineFor(mergeConfig({ engine: 'aggregation', aggregateFunctions: { qty: 'sum', price: 'max' } }));
const r2 = t('agg merge', () => agg.merge(v, { rawInput: true, dropRetracts: false }));
t('agg materialize', () => materializeMerge(v, r2, { allInsert: false }));
const src = new Uint16Array(N); 
t('gatherRows all (perm)', () => gatherRows([tbl.table], src, v.row));
}
