/**
 * README.md's "A short tour", run top to bottom as written, against a fresh local warehouse: the
 * commands are read from the README itself (so the two cannot drift), each `npx varve …` runs
 * the CLI, each `echo '…' > file` makes the file. Every command exits 0 and prints what its
 * comment promises, except `redrive`, which needs a table deployed on AWS and says so. The tour
 * ends by itself: it runs `tail` without `--follow` (the README says what --follow adds).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { runVarve } from '../helpers/cli-process.js';

const README = join(__dirname, '../../README.md');

/** The shell text of the tour: the first ```sh block after the "A short tour" heading. */
function tourText(readme: string): string {
  const from = readme.indexOf('## A short tour');
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(from));
  if (from < 0 || !block) throw new Error('README.md has no "## A short tour" section with a ```sh block');
  return block[1];
}

/**
 * The commands of a shell text, each as its words: quotes ('…', "…") and backslash-newline
 * continuations as sh reads them, `#` comments dropped, `>` a word of its own. Enough for the
 * tour, which uses nothing else (a construct it does not know fails the test, in `run`).
 */
function shellCommands(text: string): string[][] {
  const commands: string[][] = [];
  let words: string[] = [];
  let word: string | undefined;
  const endWord = () => {
    if (word !== undefined) words.push(word);
    word = undefined;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "'" || c === '"') {
      const close = text.indexOf(c, i + 1);
      if (close < 0) throw new Error(`unclosed ${c} in the tour at: ${text.slice(i, i + 60)}`);
      word = (word ?? '') + text.slice(i + 1, close);
      i = close;
    } else if (c === '\\' && text[i + 1] === '\n') {
      endWord();
      i++;
    } else if (c === '#' && word === undefined) {
      while (i + 1 < text.length && text[i + 1] !== '\n') i++;
    } else if (c === '\n') {
      endWord();
      if (words.length > 0) commands.push(words);
      words = [];
    } else if (c === ' ' || c === '\t') {
      endWord();
    } else if (c === '>') {
      endWord();
      words.push('>');
    } else {
      word = (word ?? '') + c;
    }
  }
  endWord();
  if (words.length > 0) commands.push(words);
  return commands;
}

it('the README tour runs top to bottom as written, against a fresh local warehouse', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'varve-tour-'));
  const warehouse = join(dir, 'warehouse');
  const made = new Set<string>();
  const ran: Array<{ line: string; code: number; out: string; err: string }> = [];
  for (const words of shellCommands(tourText(readFileSync(README, 'utf8')))) {
    const line = words.join(' ');
    if (words[0] === 'echo' && words.length === 4 && words[2] === '>') {
      writeFileSync(join(dir, words[3]), `${words[1]}\n`);
      made.add(words[3]);
      continue;
    }
    expect(words.slice(0, 2), `the tour has a command this test does not run: ${line}`).toEqual(['npx', 'varve']);
    // The files the tour made are in its folder (the tour runs in one folder; this process does not chdir).
    const args = words.slice(2).map((w) => (made.has(w) ? join(dir, w) : w));
    ran.push({ line, ...(await runVarve(warehouse, args)) });
  }

  const result = (start: string) => {
    const found = ran.filter((r) => r.line.startsWith(start));
    expect(found.length, `the tour has no command starting "${start}"`).toBeGreaterThan(0);
    return found;
  };
  // Every command succeeds, but the AWS one, which says what it needs.
  for (const r of ran.filter((x) => !x.line.startsWith('npx varve redrive')))
    expect({ line: r.line, code: r.code, err: r.err.slice(0, 500) }).toMatchObject({ line: r.line, code: 0 });
  const [redrive] = result('npx varve redrive');
  expect(redrive.code).toBe(1);
  expect(redrive.err).toMatch(/local warehouse .* no commit queue to redrive.*deployed on AWS.*--warehouse s3:\/\//);
  // What the comments promise.
  const writes = result('npx varve write shop.orders in.jsonl --commit-identifier load-42');
  expect(writes.map((w) => w.out)).toEqual([
    expect.stringMatching(/wrote 3 rows.*snapshot 1/),
    expect.stringMatching(/already committed .*nothing written twice/),
  ]);
  expect(result('npx varve read shop.orders')[0].out).toMatch(/ 1 +2024-05-01 +paid +9\.90/);
  expect(
    result('npx varve tail shop.orders --consumer-id me')[0]
      .out.trim()
      .split('\n')
      .map((l) => JSON.parse(l).kind),
  ).toEqual(['+I', '+I']);
  expect(result('npx varve write shop.orders day2.jsonl --overwrite')[0].out).toMatch(/snapshot/);
  expect(result('npx varve delete shop.orders')[0].out).toMatch(/deleted 1 row/);
  expect(result('npx varve rescale shop.orders')[0].out).toMatch(/8 buckets|snapshot/);
  expect(result('npx varve verify shop.orders')[0].out).toMatch(/: ok/);
  expect(result('npx varve --help')[0].out).toContain('Usage: varve');
});
