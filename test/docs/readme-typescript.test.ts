import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/**
 * Every TypeScript block of the README compiles under the project's strict settings, as a module
 * of its own. A block's free variables (the `model`, `tools` or `sessionId` a fragment takes as
 * given) are declared in a `<!-- ts-preamble … -->` comment right above it, invisible on the
 * rendered page; `turnlog` resolves to this repository's index.ts.
 */

const run = promisify(execFile);
const repoRoot = path.resolve(import.meta.dirname, '..', '..');
/** The README and the reference pages in docs/, by path. */
const pages = [
  'README.md',
  ...readdirSync(path.join(repoRoot, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .map((file) => `docs/${file}`),
].map((page) => ({ page, text: readFileSync(path.join(repoRoot, page), 'utf8') }));

interface ReadmeBlock {
  line: number;
  preamble: string;
  code: string;
}

/** The README's ```ts blocks, each with the preamble comment above it (if any). */
function typescriptBlocks(markdown: string): ReadmeBlock[] {
  const blocks: ReadmeBlock[] = [];
  const fence = /^```ts\n([\s\S]*?)^```$/gm;
  for (const match of markdown.matchAll(fence)) {
    const before = markdown.slice(0, match.index);
    const last = before.lastIndexOf('<!-- ts-preamble\n');
    // The preamble is the comment right above the block (other one-line comments may follow it).
    const preamble =
      last === -1
        ? null
        : /^<!-- ts-preamble\n((?:(?!-->)[\s\S])*)-->\n(?:<!-- [^\n]* -->\n)*$/.exec(
            before.slice(last),
          );
    blocks.push({
      line: before.split('\n').length,
      preamble: preamble?.[1] ?? '',
      code: match[1] ?? '',
    });
  }
  return blocks;
}

describe('the TypeScript of README.md and docs/', () => {
  const blocks = pages.flatMap(({ page, text }) =>
    typescriptBlocks(text).map((block) => ({ ...block, page })),
  );

  it('finds the blocks, and a preamble only where one is written', () => {
    expect(blocks.filter((block) => block.page === 'README.md').length).toBeGreaterThanOrEqual(10);
    for (const { page, text } of pages) {
      const withPreamble = text.match(/<!-- ts-preamble\n/g)?.length ?? 0;
      const found = blocks.filter((block) => block.page === page && block.preamble !== '');
      expect(found, page).toHaveLength(withPreamble);
    }
  });

  it('compiles every block under strict mode, its preamble declaring its free variables', async () => {
    const folder = path.join(repoRoot, 'test-output', 'readme-blocks');
    rmSync(folder, { recursive: true, force: true });
    mkdirSync(folder, { recursive: true });
    const files = blocks.map((block) => {
      const file = `${block.page.replace(/\W/g, '-')}-line-${block.line}.ts`;
      const source = `${block.preamble}${block.code}export {};\n`.replaceAll(
        "from 'turnlog'",
        "from '../../index.ts'",
      );
      writeFileSync(path.join(folder, file), source);
      return file;
    });
    writeFileSync(
      path.join(folder, 'tsconfig.json'),
      JSON.stringify({ extends: '../../tsconfig.json', include: [], files }),
    );
    const tsc = path.join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await run(process.execPath, [tsc, '-p', folder, '--pretty', 'false'], {
      cwd: repoRoot,
    }).catch((error: { stdout: string }) => ({ stdout: error.stdout }));
    const errors = result.stdout.split('\n').filter((line) => /error TS\d+/.test(line));
    expect(errors).toEqual([]);
  }, 180_000);
});
