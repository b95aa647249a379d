import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { measureShape } from '../../scripts/shape.ts';

const root = path.resolve(import.meta.dirname, '../..');

describe('the shape of the source (scripts/shape.ts)', () => {
  const shape = measureShape(root, 120);

  it('has no function longer than 120 lines outside the declarative definitions', () => {
    expect(shape.over.map((entry) => `${entry.file}:${entry.line} ${entry.name}`)).toEqual([]);
  });

  it('has no import cycle among the source files, type imports included', () => {
    expect(shape.cycles).toEqual([]);
  });

  it('measures what it claims: the library source, with its longest function', () => {
    expect(shape.files).toBeGreaterThan(100);
    expect(shape.functions[0]?.name).toBe('defineFactSchemas');
    expect(shape.functions.some((entry) => entry.file.startsWith('test/'))).toBe(false);
  });
});

describe('measureShape', () => {
  it('finds a planted long method and a cycle made only of type imports', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'turnlog-shape-'));
    try {
      const body = Array.from({ length: 125 }, (_, index) => `    const v${index} = ${index};`);
      writeFileSync(
        path.join(dir, 'a.ts'),
        `import type { B } from './b.ts';\nexport type A = B;\nexport class Long {\n  run() {\n${body.join('\n')}\n  }\n}\n`,
      );
      writeFileSync(
        path.join(dir, 'b.ts'),
        `import type { A } from './a.ts';\nexport type B = A;\n`,
      );
      execFileSync('git', ['init', '-q'], { cwd: dir });
      const planted = measureShape(dir, 120);
      expect(planted.over.map((entry) => [entry.file, entry.name, entry.lines])).toEqual([
        ['a.ts', 'run', 127],
      ]);
      expect(planted.cycles).toEqual([['a.ts', 'b.ts']]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
