import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as errors from '../../errors.ts';
import * as turnlog from '../../index.ts';

const repoRoot = path.resolve(import.meta.dirname, '..', '..');
const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');

/** The text between `<!-- name -->` and `<!-- /name -->` in the README. */
function marked(name: string): string {
  const start = readme.indexOf(`<!-- ${name} -->`);
  const end = readme.indexOf(`<!-- /${name} -->`);
  if (start === -1 || end < start) throw new Error(`README.md has no <!-- ${name} --> block`);
  return readme.slice(start, end);
}

const sorted = (names: Iterable<string>) => [...new Set(names)].sort();

describe("README.md's API lists", () => {
  it('lists every value the package exports, errors apart, and nothing else', () => {
    const listed = [...marked('exports').matchAll(/`([A-Za-z]\w*)`/g)].map(([, name = '']) => name);
    const exported = Object.keys(turnlog).filter((name) => !(name in errors));
    expect(sorted(listed)).toEqual(sorted(exported));
    expect(listed).toHaveLength(new Set(listed).size);
  });

  it('lists every error class in its errors table, each exported from the package root', () => {
    const rows = [...marked('errors').matchAll(/^\| `(\w+)` \|/gm)].map(([, name = '']) => name);
    const errorClasses = Object.keys(errors).filter((name) => name !== 'TurnlogError');
    expect(sorted(rows)).toEqual(sorted(errorClasses));
    expect(rows).toHaveLength(new Set(rows).size);
    for (const name of Object.keys(errors)) expect(name in turnlog, name).toBe(true);
    expect(readme).toContain('Every one extends `TurnlogError`');
  });
});
