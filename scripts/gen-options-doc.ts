/** Writes docs/OPTIONS.md from the option declaration (lib/schema/option-catalog.ts). Run: npx tsx scripts/gen-options-doc.ts */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderOptionsMarkdown } from '../lib/schema/options.js';

const target = fileURLToPath(new URL('../docs/OPTIONS.md', import.meta.url));
writeFileSync(target, renderOptionsMarkdown());
console.log(`wrote ${target}`);
