import { mkdtempSync } from 'node:fs';
const name = process.argv[2];
const mod = await import(`../suites/${name}.ts`);
const fn = Object.values(mod).find((f) => typeof f === 'function' && (f as Function).name.startsWith('run')) as Function;
const r = await fn({ quick: process.argv[3] === 'quick', tmp: mkdtempSync('/tmp/vb-'), log: console.log });
for (const m of r.measurements) console.log(m.label.padEnd(80), m.stats.median.toFixed(2), `[${m.stats.min.toFixed(1)}–${m.stats.max.toFixed(1)}]`, m.unit, JSON.stringify(m.params ?? {}));
for (const x of r.ratios) console.log('RATIO', x.label, x.value.toFixed(2), `[${x.min.toFixed(2)}–${x.max.toFixed(2)}]`, x.target ?? '');
for (const t of r.tables ?? []) { console.log('TABLE', t.title, t.columns.join(' | ')); for (const row of t.rows) console.log('   ', row.join(' | ')); }
