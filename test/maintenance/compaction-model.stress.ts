/** Stress variant of compaction-model.test.ts (`npm run stress`): the same seeded sequences at full length. */
process.env.VARVE_STRESS = '1';
await import('./compaction-model.test.js');
