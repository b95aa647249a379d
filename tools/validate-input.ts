import { hashJson, type JsonValue } from '../events/json.ts';
import type { StandardSchemaV1, Tool } from './tool.ts';
import {
  minRedactedLength,
  readSecrets,
  redactedMessage,
  redactSecrets,
  type ToolSecrets,
  withheldNote,
} from './tool-output.ts';

/** The most issues listed in an `invalid` text. */
const maxListedIssues = 20;

/** The outcome of validating a call's raw input against its tool's schema. */
export type InputValidation =
  | {
      status: 'valid';
      /** The schema's output (defaults, transforms, preprocess applied): what `execute` gets. */
      value: unknown;
      /** `value` as JSON: what `tool.started` and permission requests record. */
      json: JsonValue;
      /** `hashJson(json)`: what a permission decision is bound to. */
      inputHash: string;
    }
  | { status: 'invalid'; text: string }
  | { status: 'error'; text: string };

/**
 * Validates a call's raw input with its tool's schema. Never throws: a failing schema gives
 * `invalid` with a text naming each failing field and what it expects (never the values); a
 * throwing schema or an output that is not JSON gives `error`. The schema's messages go through
 * the tool's `secrets`, called with the raw input (there is no validated one): redacted, or
 * withheld when the secrets cannot be read.
 */
export async function validateToolInput({
  name,
  tool,
  raw,
}: {
  name: string;
  tool: Pick<Tool, 'inputSchema' | 'secrets'>;
  raw: unknown;
}): Promise<InputValidation> {
  const secretsOfRaw = () => readSecrets(() => tool.secrets(structuredClone(raw)));
  let result: StandardSchemaV1.Result<unknown>;
  try {
    // A copy: a transform must not change the call record it came from.
    result = await tool.inputSchema['~standard'].validate(structuredClone(raw));
  } catch (error) {
    return {
      status: 'error',
      text: `The input of tool "${name}" could not be validated (its schema threw: ${redactedMessage(error, secretsOfRaw())}). The call was not run.`,
    };
  }
  if (result.issues !== undefined) {
    return {
      status: 'invalid',
      text: describeIssues({ name, issues: result.issues, raw, secrets: secretsOfRaw() }),
    };
  }
  let json: JsonValue | undefined;
  try {
    json = JSON.parse(JSON.stringify(result.value) ?? 'null') as JsonValue;
  } catch {
    json = undefined;
  }
  if (json === undefined || result.value === undefined) {
    return {
      status: 'error',
      text: `The schema of tool "${name}" produced a value that cannot be recorded as JSON (a bigint or a cycle?). The call was not run.`,
    };
  }
  return { status: 'valid', value: result.value, json, inputHash: hashJson(json) };
}

/**
 * The model-visible text for a failed validation: each failing field with the schema's message,
 * raw input strings blanked out of it and the tool's secrets redacted; when the secrets cannot
 * be read, the fields alone.
 */
export function describeIssues({
  name,
  issues,
  raw,
  secrets,
}: {
  name: string;
  issues: ReadonlyArray<StandardSchemaV1.Issue>;
  raw: unknown;
  secrets: ToolSecrets;
}): string {
  const echoes = rawStrings(raw).filter((value) => value.length >= minRedactedLength);
  const lines = issues.slice(0, maxListedIssues).map((issue) => {
    if (!secrets.readable) return `- ${formatPath(issue.path)}`;
    const message = blankOut(String(issue.message), echoes).replace(
      /,? received undefined$/,
      ', but it is missing',
    );
    return redactSecrets(`- ${formatPath(issue.path)}: ${message}`, secrets.secrets);
  });
  if (issues.length > maxListedIssues) {
    lines.push(`- … and ${issues.length - maxListedIssues} more`);
  }
  const header = `Invalid input for tool "${name}"; the call was not run. Fix these fields and call it again`;
  return [
    secrets.readable
      ? `${header}:`
      : `${header} ${withheldNote("the schema's messages are", secrets)}:`,
    ...lines,
  ].join('\n');
}

/** `path.to[0].field`, or `(input)` for the input itself. */
function formatPath(path: StandardSchemaV1.Issue['path']): string {
  if (path === undefined || path.length === 0) return '(input)';
  let result = '';
  for (const segment of path) {
    const key = typeof segment === 'object' && segment !== null ? segment.key : segment;
    if (typeof key === 'number') result += `[${key}]`;
    else if (typeof key === 'string' && /^[A-Za-z_$][\w$]*$/.test(key)) {
      result += result === '' ? key : `.${key}`;
    } else result += `[${JSON.stringify(String(key))}]`;
  }
  return result;
}

function rawStrings(value: unknown, found: string[] = [], depth = 0): string[] {
  if (depth > 32) return found;
  if (typeof value === 'string') found.push(value);
  else if (Array.isArray(value)) for (const item of value) rawStrings(item, found, depth + 1);
  else if (typeof value === 'object' && value !== null) {
    for (const item of Object.values(value)) rawStrings(item, found, depth + 1);
  }
  return found;
}

function blankOut(message: string, values: readonly string[]): string {
  let result = message;
  for (const value of [...values].sort((a, b) => b.length - a.length)) {
    result = result.split(value).join('[value]');
  }
  return result;
}
