import type { z } from 'zod';

/** A yes/no check compiled from a zod schema: the same verdict, no allocation, no issues. */
export type CompiledCheck = (value: unknown) => boolean;

type Def = {
  type: string;
  checks?: unknown[];
  catchall?: unknown;
  values?: unknown[];
  entries?: Record<string, unknown>;
  innerType?: z.ZodType;
  element?: z.ZodType;
  valueType?: z.ZodType;
  options?: z.ZodType[];
  shape?: Record<string, z.ZodType>;
  fn?: (value: unknown) => unknown;
};

/**
 * Compiles a zod schema into a plain predicate that answers what `schema.safeParse(value)
 * .success` answers, for the kinds the read schemas of facts use (fact-schemas.ts): strings,
 * finite numbers, booleans, literals, enums, optional, nullable, arrays, string-keyed records,
 * unions, custom checks and non-strict objects. A store checks every fact of a session it reads;
 * `safeParse` builds a copy of each, and its allocations made a cold read of 10,000 facts about
 * 1.5 times as long; this adds 10–30 ms per 10,000 facts (bench/RESULTS.md). Anything else —
 * refinements (`min`, `int`), a strict object, a transform — throws here, when the check is
 * made, so the two can never disagree silently; `safeParse` still explains a failure.
 *
 * @example
 * const isRunStarted = compileCheck(readSchemas.facts['run.started']);
 * isRunStarted(fact); // true or false, as readSchemas.facts['run.started'].safeParse(fact).success
 */
export function compileCheck(schema: z.ZodType): CompiledCheck {
  const def = (schema as unknown as { _zod: { def: Def } })._zod.def;
  if ((def.checks?.length ?? 0) > 0 || def.catchall !== undefined) return unsupported(def);
  const inner = (of: z.ZodType | undefined) =>
    of === undefined ? unsupported(def) : compileCheck(of);
  switch (def.type) {
    case 'string':
      return (value) => typeof value === 'string';
    case 'number':
      return (value) => typeof value === 'number' && Number.isFinite(value);
    case 'boolean':
      return (value) => typeof value === 'boolean';
    case 'literal': {
      const values = def.values ?? [];
      return (value) => values.includes(value);
    }
    case 'enum': {
      const values = new Set(Object.values(def.entries ?? {}));
      return (value) => values.has(value);
    }
    case 'optional': {
      const check = inner(def.innerType);
      return (value) => value === undefined || check(value);
    }
    case 'nullable': {
      const check = inner(def.innerType);
      return (value) => value === null || check(value);
    }
    case 'array': {
      const check = inner(def.element);
      return (value) => Array.isArray(value) && value.every(check);
    }
    case 'record': {
      const check = inner(def.valueType);
      return (value) => isRecord(value) && Object.values(value).every(check);
    }
    case 'union': {
      const checks = (def.options ?? []).map(compileCheck);
      return (value) => checks.some((check) => check(value));
    }
    case 'custom': {
      const fn = def.fn ?? unsupported(def);
      return (value) => Boolean(fn(value));
    }
    case 'object': {
      const fields = Object.entries(def.shape ?? {}).map(
        ([key, field]) => [key, compileCheck(field)] as const,
      );
      return (value) => {
        if (!isRecord(value)) return false;
        for (const [key, check] of fields) if (!check(value[key])) return false;
        return true;
      };
    }
    default:
      return unsupported(def);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function unsupported(def: Def): never {
  throw new Error(
    `compileCheck: a zod ${def.type} schema${(def.checks?.length ?? 0) > 0 ? ' with refinements' : def.catchall !== undefined ? ' (strict)' : ''} cannot be compiled; keep read schemas to the kinds it lists, or check with safeParse`,
  );
}
