import * as arrow from 'apache-arrow';
import { writeFileSync, readFileSync } from 'node:fs';
import { physicalArrowSchema } from '../lib/format/arrow-schema';
import { takeRows } from '../lib/format/columns';
import { sortVersions } from '../lib/mergetree/merge-plan';
const N = 1_000_000;
const schema: any = { version: 1, id: 0, fields: [
 { id: 1, name: 'id', type: { root: 'BIGINT', nullable: false } },
 { id: 2, name: 'qty', type: { root: 'INT', nullable: true } },
 { id: 3, name: 'price', type: { root: 'DOUBLE', nullable: true } },
 { id: 4, name: 'name', type: { root: 'STRING', nullable: true } },
 { id: 5, name: 'note', type: { root: 'STRING', nullable: true } }], highestFieldId: 5, partitionKeys: [], primaryKeys: ['id'], options: {}, timeMillis: 0 };
const enc = new TextEncoder();
function utf8(values: (string|null)[]) { const n = values.length; const parts = values.map(v => enc.encode(v ?? '')); const off = new Int32Array(n+1); for (let i=0;i<n;i++) off[i+1]=off[i]+parts[i].length; const b = new Uint8Array(off[n]); parts.forEach((p,i)=>b.set(p,off[i])); const val = new Uint8Array((n+7)>>3); let nulls=0; values.forEach((v,i)=> v===null? nulls++ : (val[i>>3] |= 1<<(i&7))); return arrow.makeData({ type: new arrow.Utf8(), length: n, nullCount: nulls, nullBitmap: nulls?val:undefined, valueOffsets: off, data: b }); }
const s = physicalArrowSchema(schema);
const ids = new BigInt64Array(N), qty = new Int32Array(N), price = new Float64Array(N), seq = new BigInt64Array(N); const names: string[] = [], notes: (string|null)[] = [];
for (let i=0;i<N;i++){ ids[i]=BigInt(Math.floor(Math.random()*N*0.8)); qty[i]=i; price[i]=i/3; seq[i]=BigInt(i); names.push(`customer-${i}`); notes.push(Math.random()<0.3?null:`note ${i}`); }
const children = [arrow.makeData({type:new arrow.Int64(),length:N,nullCount:0,data:ids}), arrow.makeData({type:new arrow.Int32(),length:N,nullCount:0,data:qty}), arrow.makeData({type:new arrow.Float64(),length:N,nullCount:0,data:price}), utf8(names), utf8(notes), arrow.makeData({type:new arrow.Int64(),length:N,nullCount:0,data:seq}), arrow.makeData({type:new arrow.Int8(),length:N,nullCount:0,data:new Int8Array(N)})];
const table = new arrow.Table(s, new arrow.RecordBatch(s, arrow.makeData({type:new arrow.Struct(s.fields),length:N,nullCount:0,children})));
const t = (l: string, f: () => any) => { const t0 = performance.now(); const r = f(); console.log(l.padEnd(30), (performance.now()-t0).toFixed(0)); return r; };
for (let rep=0;rep<2;rep++){
const o = t('sortVersions', () => sortVersions(table, { keyColumns: ['id'], sequenceFields: [], sequenceDescending: false }));
const sorted = t('takeRows', () => takeRows(table, o.order));
const bytes = t('tableToIPC', () => arrow.tableToIPC(sorted, 'file'));
t('writeFileSync', () => writeFileSync('/tmp/x.arrow', bytes));
const back = t('read+tableFromIPC', () => arrow.tableFromIPC(readFileSync('/tmp/x.arrow')));
console.log(bytes.byteLength, back.numRows);
}
