import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

  it('has no import from a lower layer to a higher one (architecture/README.md)', () => {
    expect(shape.crossings).toEqual([]);
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
      expect(planted.crossings).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('finds an import across the layers the wrong way', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'turnlog-shape-'));
    try {
      mkdirSync(path.join(dir, 'store'));
      mkdirSync(path.join(dir, 'machines'));
      writeFileSync(path.join(dir, 'machines', 'm.ts'), 'export const m = 1;\n');
      writeFileSync(
        path.join(dir, 'store', 's.ts'),
        "import { m } from '../machines/m.ts';\nexport const s = m;\n",
      );
      writeFileSync(
        path.join(dir, 'runtime.ts'),
        "import { s } from './store/s.ts';\nexport const r = s;\n",
      );
      execFileSync('git', ['init', '-q'], { cwd: dir });
      expect(measureShape(dir, 120).crossings).toEqual([
        'store/s.ts (store) → machines/m.ts (machines)',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
