import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { compileCheck } from '../../events/compile-check.ts';
import { factTypes, readSchemas } from '../../events/fact-schemas.ts';
import type { Fact } from '../../events/facts.ts';
import { loadSampleLog, sampleLogNames } from './sample-logs.ts';

const facts = sampleLogNames.flatMap((name) => loadSampleLog(name));
const checks = Object.fromEntries(
  factTypes.map((type) => [type, compileCheck(readSchemas.facts[type] as z.ZodType)]),
);
const agree = (value: Record<string, unknown>) => {
  const type = value.type as Fact['type'];
  expect(checks[type]?.(value)).toBe(readSchemas.facts[type].safeParse(value).success);
};

/** Sets the value at `path` (object keys and array indices) in a deep copy of `value`. */
function withValueAt(value: unknown, path: readonly (string | number)[], next: unknown): unknown {
  if (path.length === 0) return next;
  const [key, ...rest] = path as [string | number, ...(string | number)[]];
  const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<
    string | number,
    unknown
  >;
  copy[key] = withValueAt(copy[key], rest, next);
  return copy;
}

/** Every path into a JSON value, the value itself included. */
function pathsOf(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const inner =
    typeof value === 'object' && value !== null
      ? Object.entries(value).flatMap(([key, item]) =>
          pathsOf(item, [...prefix, Array.isArray(value) ? Number(key) : key]),
        )
      : [];
  return [prefix, ...inner];
}

describe('compileCheck', () => {
  it('gives the read schemas’ verdict on every sample fact, changed anywhere to anything', () => {
    const cases = facts.flatMap((fact) =>
      pathsOf(fact)
        .filter((path) => path.length > 0 && path[0] !== 'type')
        .map((path) => ({ fact, path })),
    );
    fc.assert(
      fc.property(
        fc.constantFrom(...cases),
        fc.oneof(fc.jsonValue(), fc.constant(undefined), fc.constant(Number.NaN)),
        ({ fact, path }, next) => {
          agree(withValueAt(fact, path, next) as Record<string, unknown>);
        },
      ),
      { numRuns: 2_000 },
    );
    for (const fact of facts) agree(fact as unknown as Record<string, unknown>);
  });

  it('refuses to compile what it cannot check exactly: refinements, strict objects, transforms', () => {
    for (const schema of [
      z.string().min(1),
      z.number().int(),
      z.strictObject({ a: z.string() }),
      z.string().transform((text) => text.length),
    ]) {
      expect(() => compileCheck(schema)).toThrowError(/cannot be compiled/);
    }
  });
});
