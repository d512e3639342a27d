/** Stress variant of compact-faults.test.ts (`npm run stress`): the crash sweep over a compaction of six level-0 files. */
process.env.VARVE_STRESS = '1';
await import('./compact-faults.test.js');
