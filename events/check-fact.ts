import type { z } from 'zod';
import { type CompiledCheck, compileCheck } from './compile-check.ts';
import { appendSchemas, factTypes, readSchemas } from './fact-schemas.ts';

/** The schemas of facts before the store gave them a `seq` (what `append` receives). */
const newFactSchemas: Record<string, z.ZodType> = Object.fromEntries(
  factTypes.map((type) => [type, (appendSchemas.facts[type] as z.ZodObject).omit({ seq: true })]),
);
const storedFactSchemas: Record<string, z.ZodType> = readSchemas.facts;
/** The read schemas as plain predicates: a read checks every fact, and most are fine. */
const storedFactChecks: Record<string, CompiledCheck> = Object.fromEntries(
  factTypes.map((type) => [type, compileCheck(storedFactSchemas[type] as z.ZodType)]),
);

/**
 * What is wrong with a fact, in words naming its type and the first bad field, or `undefined`
 * when its type's schema accepts it. New facts (appends) get the strict check and must not carry
 * a `seq`; `stored` ones (reads) the check of every field's presence and type (fact-schemas.ts).
 *
 * @example
 * factProblem({ ...stepCompleted, toolCalls: undefined }, { stored: true });
 * // 'step.completed field toolCalls is missing (expected array)'
 */
export function factProblem(value: unknown, options: { stored: boolean }): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return 'it is not an object';
  }
  const type = (value as { type?: unknown }).type;
  if (typeof type !== 'string' || !Object.hasOwn(storedFactSchemas, type)) {
    return `its type ${JSON.stringify(type) ?? 'undefined'} is not a known fact type`;
  }
  // The compiled check answers a read; safeParse explains a refusal, and checks an append.
  if (options.stored && storedFactChecks[type]?.(value)) return undefined;
  const schema = (options.stored ? storedFactSchemas : newFactSchemas)[type] as z.ZodType;
  const result = schema.safeParse(value, { reportInput: true });
  if (result.success) return undefined;
  const [issue] = result.error.issues;
  return `${type} ${issue === undefined ? 'does not match its schema' : describeIssue(issue)}`;
}

/** One zod issue as "field `path` …" in plain words. */
function describeIssue(issue: z.core.$ZodIssue): string {
  const field = pathText(issue.path);
  const got = issueValue(issue);
  if (got === undefined && issue.code !== 'unrecognized_keys') {
    return `field ${field} is missing (expected ${expectedOf(issue)})`;
  }
  switch (issue.code) {
    case 'unrecognized_keys': {
      const keys = issue.keys.map((key) => pathText([...issue.path, key])).join(', ');
      const several = issue.keys.length > 1;
      return `has unknown field${several ? 's' : ''} ${keys}; no version of turnlog writes ${several ? 'them' : 'it'}`;
    }
    case 'too_small':
      if (issue.origin === 'string') return `field ${field} must be a non-empty string`;
      return `field ${field} must be at least ${String(issue.minimum)}, not ${shown(got)}`;
    case 'invalid_union': {
      // A plain union (run.ended's error) reports the first issue of its first branch.
      const first = issue.errors[0]?.[0];
      if (issue.discriminator === undefined && first !== undefined) {
        return describeIssue({ ...first, path: [...issue.path, ...first.path] });
      }
      return `field ${field} must be ${expectedOf(issue)}, not ${shown(got)}`;
    }
    case 'invalid_type':
    case 'invalid_value':
      return `field ${field} must be ${expectedOf(issue)}, not ${shown(got)}`;
    default:
      return `field ${field} ${issue.message.replace(/^Invalid input: /, '')}`;
  }
}

/** The value the issue is about (a discriminated union reports the whole object). */
function issueValue(issue: z.core.$ZodIssue): unknown {
  if (issue.code === 'invalid_union' && issue.discriminator !== undefined) {
    return (issue.input as Record<string, unknown> | undefined)?.[issue.discriminator];
  }
  return issue.input;
}

function expectedOf(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return issue.expected;
    case 'invalid_value':
      return `one of ${issue.values.map((value) => JSON.stringify(value)).join(', ')}`;
    case 'invalid_union':
      return 'options' in issue && issue.options !== undefined
        ? `one of ${issue.options.map((value) => JSON.stringify(value)).join(', ')}`
        : 'one of its documented shapes';
    case 'custom':
      return issue.message.replace(/^must be /, '');
    default:
      return 'a value';
  }
}

function pathText(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(the fact itself)';
  return path
    .map((key, index) =>
      typeof key === 'number' ? `[${key}]` : `${index === 0 ? '' : '.'}${String(key)}`,
    )
    .join('');
}

function shown(value: unknown): string {
  if (value === undefined) return 'undefined';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}
