import { runPlanning } from '../suites/planning';
const r = await runPlanning({ quick: process.argv[2] === 'quick', tmp: '/tmp', log: console.log });
console.log(JSON.stringify(r.measurements.map((m) => [m.label, m.stats.median, m.params]), null, 1));
console.log(r.ratios, r.tables);
