import * as arrow from 'apache-arrow';
import { physicalArrowSchema } from '../lib/format/arrow-schema';
import { mergeConfig } from '../lib/mergetree/merge-config';
import { mergeEngineFor } from '../lib/mergetree/merge-function';
import { materializeMerge } from '../lib/mergetree/merge-output';
import { versionsOfRuns } from '../lib/mergetree/merge-plan';
import { keyIndex } from '../lib/mergetree/key-order';
const schema: any = { version: 1, id: 0, fields: [
 { id: 1, name: 'id', type: { root: 'BIGINT', nullable: false } },
 { id: 2, name: 'qty', type: { root: 'INT', nullable: true } },
 { id: 3, name: 'price', type: { root: 'DOUBLE', nullable: true } },
 { id: 4, name: 'name', type: { root: 'STRING', nullable: true } },
 { id: 5, name: 'note', type: { root: 'STRING', nullable: true } }], highestFieldId: 5, partitionKeys: [], primaryKeys: ['id'], options: {}, timeMillis: 0 };
const enc = new TextEncoder();
function utf8(values: (string|null)[]) { const n = values.length; const parts = values.map(v => enc.encode(v ?? '')); const off = new Int32Array(n+1); for (let i=0;i<n;i++) off[i+1]=off[i]+parts[i].length; const b = new Uint8Array(off[n]); parts.forEach((p,i)=>b.set(p,off[i])); const val = new Uint8Array((n+7)>>3); let nulls=0; values.forEach((v,i)=> v===null? nulls++ : (val[i>>3] |= 1<<(i&7))); return arrow.makeData({ type: new arrow.Utf8(), length: n, nullCount: nulls, nullBitmap: nulls?val:undefined, valueOffsets: off, data: b }); }
const s = physicalArrowSchema(schema);
function run(keys: bigint[], seqFrom: number) { const N = keys.length; const ids = BigInt64Array.from(keys), qty = new Int32Array(N), price = new Float64Array(N), seq = new BigInt64Array(N); const names: string[] = [], notes: (string|null)[] = [];
 for (let i=0;i<N;i++){ qty[i]=i; price[i]=i/3; seq[i]=BigInt(seqFrom+i); names.push(`customer-${Math.floor(Math.random()*1e6)}`); notes.push(Math.random()<0.3?null:`note ${i}`); }
 const children = [arrow.makeData({type:new arrow.Int64(),length:N,nullCount:0,data:ids}), arrow.makeData({type:new arrow.Int32(),length:N,nullCount:0,data:qty}), arrow.makeData({type:new arrow.Float64(),length:N,nullCount:0,data:price}), utf8(names), utf8(notes), arrow.makeData({type:new arrow.Int64(),length:N,nullCount:0,data:seq}), arrow.makeData({type:new arrow.Int8(),length:N,nullCount:0,data:new Int8Array(N)})];
 return new arrow.Table(s, new arrow.RecordBatch(s, arrow.makeData({type:new arrow.Struct(s.fields),length:N,nullCount:0,children}))); }
const runs: any[] = []; let seq = 0;
for (let r=0;r<5;r++){ const ks: bigint[] = []; for (let k=0;k<1_000_000;k++) if (Math.random()<0.3) ks.push(BigInt(k)*3n); const t = run(ks, seq); seq += ks.length; runs.push({ table: t, sequence: Float64Array.from({length: ks.length}, (_, i) => seq - ks.length + i) }); }
(globalThis as any).gc?.();
const t = (l: string, f: () => any) => { const t0 = performance.now(); const r = f(); console.log(l.padEnd(30), (performance.now()-t0).toFixed(0)); return r; };
for (let rep=0;rep<3;rep++){
t('keyIndex x5', () => runs.map(r => keyIndex(r.table, ['id'])));
const v = t('versionsOfRuns', () => versionsOfRuns(schema, runs, { keyColumns: ['id'], sequenceFields: [], sequenceDescending: false }));
const eng = mergeEngineFor(mergeConfig());
const res = t('dedup merge', () => eng.merge(v, { rawInput: false, dropRetracts: true }));
t('materialize', () => materializeMerge(v, res, { allInsert: true }));
const pu = mergeEngineFor(mergeConfig({engine:'partial-update'}));
const r3 = t('pu merge', () => pu.merge(v, { rawInput: false, dropRetracts: true }));
t('pu materialize', () => materializeMerge(v, r3, { allInsert: true }));
(globalThis as any).gc?.();
}
