import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const repoRoot = path.resolve(import.meta.dirname, '..', '..');
const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');

/** Every code block of the README marked `<!-- file: <path> -->`, with the file it shows. */
const shownFiles = [...readme.matchAll(/<!-- file: (\S+) -->\n```ts\n([\s\S]*?)```\n/g)].map(
  ([, file = '', code = '']) => ({
    file,
    code,
  }),
);

describe('README.md', () => {
  it('shows whole files: the quickstart and the agent test', () => {
    expect(shownFiles.map((shown) => shown.file)).toEqual([
      'examples/quickstart.ts',
      'test/docs/my-agent.test.ts',
    ]);
  });

  it.each(shownFiles)(
    'shows $file exactly as it runs (importing from turnlog instead of the repository)',
    ({ file, code }) => {
      const source = readFileSync(path.join(repoRoot, file), 'utf8');
      const fromRepository = path.relative(
        path.dirname(path.join(repoRoot, file)),
        path.join(repoRoot, 'index.ts'),
      );
      // The file without its header comment, if any.
      const body = source.slice(source.indexOf('import '));
      expect(code.replace("from 'turnlog'", `from '${fromRepository}'`)).toBe(body);
    },
  );

  it('starts with the set-up commands the CI runs', () => {
    const setUp = readme.slice(readme.indexOf('## Install'), readme.indexOf('## Quickstart'));
    expect(setUp).toContain('npm install\nnpm start');
    expect(setUp).toContain('npm test ');
    const ci = readFileSync(path.join(repoRoot, '.ci', 'run'), 'utf8');
    expect(ci).toMatch(/^npm ci$/m);
    expect(ci).toMatch(/^npm test$/m);
    const scripts = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')).scripts;
    expect(scripts.start).toBe('node examples/quickstart.ts');
  });
});
