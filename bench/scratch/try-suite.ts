import { mkdtempSync } from 'node:fs';
const name = process.argv[2];
const mod = await import(`../suites/${name}.ts`);
const fn = Object.values(mod).find((f) => typeof f === 'function' && (f as Function).name.startsWith('run')) as Function;
const r = await fn({ quick: process.argv[3] === 'quick', tmp: mkdtempSync('/tmp/vb-'), log: console.log });
console.log(JSON.stringify({ ...r, measurements: r.measurements.map((m: any) => [m.label, m.stats.median.toFixed(2), m.stats.min.toFixed(1), m.stats.max.toFixed(1), m.params]) }, null, 1));
