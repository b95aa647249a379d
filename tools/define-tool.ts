import { z } from 'zod';
import type { JsonObject } from '../events/json.ts';
import type { ModelToolDefinition } from '../events/messages.ts';
import type {
  ReconcileResult,
  StandardSchemaV1,
  Tool,
  ToolExecuteContext,
  ToolPermission,
  ToolReconcileContext,
  ToolSet,
} from './tool.ts';
import {
  ReservedToolNameError,
  ToolDefinitionError,
  ToolSchemaConversionError,
} from './tool-errors.ts';

/** The longest timer Node accepts (about 24.8 days); longer timeouts would fire at once. */
const maxTimeoutMs = 2_147_483_647;

/** Tool names providers accept. */
const toolNamePattern = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Names no tool may have: those of `Object.prototype`'s properties (`__proto__`, `constructor`,
 * `toString`, `hasOwnProperty`, …) and `prototype`. Every object already means something by
 * them: assigned as a key, `__proto__` replaces the record's prototype instead of adding a tool.
 */
export const reservedToolNames: ReadonlySet<string> = new Set([
  ...Object.getOwnPropertyNames(Object.prototype),
  'prototype',
]);

/** What `defineTool` takes: `execute`'s input is the schema's *output* (defaults, transforms). */
export interface ToolDefinition<TSchema extends StandardSchemaV1, TOutput> {
  /** What the tool does and when to use it; the model reads it. */
  description: string;
  /** A zod v4 schema or any Standard Schema; its input side becomes the model's JSON Schema. */
  inputSchema: TSchema;
  /** `'allow'` (default), `'ask'`, `'deny'`, or a function of the validated input. */
  permission?: ToolPermission<StandardSchemaV1.InferOutput<TSchema>>;
  /** Milliseconds before the call settles `error` (default 120 000). */
  timeoutMs?: number;
  /**
   * Strings to redact from the model-visible text (API keys the tool uses, say); see
   * `Tool.secrets` for when it is called and what happens when it throws.
   */
  secrets?: (input: StandardSchemaV1.InferOutput<TSchema>) => string[];
  execute: (
    input: StandardSchemaV1.InferOutput<TSchema>,
    context: ToolExecuteContext,
  ) => TOutput | Promise<TOutput>;
  /**
   * For a call that started and never settled (a crash, a takeover), asked after the restart
   * before anyone: did it take effect? Look it up by `context.idempotencyKey`. `done` settles
   * the call with `output`; `not-done` runs it again, once, with the same key; `unknown` (or a
   * throw, or no answer within `reconcileTimeoutMs`) asks a person, as without `reconcile`.
   */
  reconcile?: (
    input: StandardSchemaV1.InferOutput<TSchema>,
    context: ToolReconcileContext,
  ) => ReconcileResult<Awaited<TOutput>> | Promise<ReconcileResult<Awaited<TOutput>>>;
  /** Milliseconds `reconcile` may take (default 10 000). */
  reconcileTimeoutMs?: number;
  /**
   * True when running the tool again has the same effect as running it once (a read, a
   * deduplicated send): a call that started and never settled runs again after a restart,
   * without asking anyone. Default false.
   */
  idempotent?: boolean;
}

/**
 * Defines a tool. `execute` receives the schema's validated output, typed from the schema.
 * Throws `ToolDefinitionError` for a definition that cannot work.
 *
 * @example
 * const weather = defineTool({
 *   description: 'Current weather for a city',
 *   inputSchema: z.object({ city: z.string(), unit: z.enum(['C', 'F']).default('C') }),
 *   execute: async ({ city, unit }) => ({ city, unit, temperature: 21 }),
 * });
 */
export function defineTool<TSchema extends StandardSchemaV1, TOutput>(
  definition: ToolDefinition<TSchema, TOutput>,
): Tool<StandardSchemaV1.InferOutput<TSchema>, Awaited<TOutput>> {
  assertToolDefinition(definition);
  type Defined = Tool<StandardSchemaV1.InferOutput<TSchema>, Awaited<TOutput>>;
  return {
    description: definition.description,
    inputSchema: definition.inputSchema,
    permission: definition.permission ?? 'allow',
    timeoutMs: definition.timeoutMs ?? 120_000,
    secrets: definition.secrets ?? (() => []),
    execute: definition.execute as Defined['execute'],
    ...(definition.reconcile && { reconcile: definition.reconcile }),
    ...(definition.reconcileTimeoutMs !== undefined && {
      reconcileTimeoutMs: definition.reconcileTimeoutMs,
    }),
    ...(definition.idempotent !== undefined && { idempotent: definition.idempotent }),
  };
}

/**
 * Checks a tool (from `defineTool` or written by hand) and its name; throws
 * `ToolDefinitionError` naming the tool and the field that is wrong.
 */
export function assertTool(name: string, tool: unknown): asserts tool is Tool {
  assertToolName(name);
  if (typeof tool !== 'object' || tool === null) {
    throw new ToolDefinitionError({
      message: `Tool "${name}" is not a tool object; create it with defineTool({ description, inputSchema, execute })`,
      toolName: name,
      field: 'tool',
    });
  }
  assertToolDefinition(tool as Partial<ToolDefinition<StandardSchemaV1, unknown>>, name);
  const candidate = tool as Partial<Tool>;
  if (typeof candidate.timeoutMs !== 'number') {
    fail(name, 'timeoutMs', 'has no timeoutMs; create it with defineTool, which sets defaults');
  }
  if (typeof candidate.secrets !== 'function') {
    fail(
      name,
      'secrets',
      'has no secrets function; create it with defineTool, which sets defaults',
    );
  }
  if (candidate.permission === undefined) {
    fail(name, 'permission', 'has no permission; create it with defineTool, which sets defaults');
  }
}

/**
 * Throws `ToolDefinitionError` unless `name` is a tool name providers accept, and
 * `ReservedToolNameError` for a name in `reservedToolNames`.
 */
export function assertToolName(name: string): void {
  if (reservedToolNames.has(name)) {
    throw new ReservedToolNameError({
      message: `Tool name ${JSON.stringify(name)} is reserved: every JavaScript object already has a ${JSON.stringify(name)}, so a tool by that name would be lost or become the prototype of its tool record; give the tool another name`,
      toolName: name,
    });
  }
  if (!toolNamePattern.test(name)) {
    throw new ToolDefinitionError({
      message: `Tool name ${JSON.stringify(name)} is not accepted by providers; use 1 to 64 letters, digits, "_" or "-"`,
      toolName: name,
      field: 'name',
    });
  }
}

/**
 * The model's view of a tool set: name, description and the JSON Schema of each schema's
 * *input* side (what the model must send). Throws `ToolSchemaConversionError` naming the tool
 * when a schema cannot be expressed as JSON Schema.
 *
 * @example
 * const definitions = toModelToolDefinitions({ weather });
 * // [{ name: 'weather', description: 'Current weather for a city', inputSchema: { type: 'object', … } }]
 */
export function toModelToolDefinitions(tools: ToolSet): ModelToolDefinition[] {
  return Object.entries(tools).map(([name, tool]) => {
    assertTool(name, tool);
    return { name, description: tool.description, inputSchema: toInputJsonSchema(name, tool) };
  });
}

function toInputJsonSchema(name: string, tool: Tool): JsonObject {
  const schema = tool.inputSchema as StandardSchemaV1 & {
    '~standard': { jsonSchema?: { input?: (options: { target: string }) => unknown } };
  };
  const converter = schema['~standard'].jsonSchema?.input;
  let converted: unknown;
  try {
    if (typeof converter === 'function') {
      converted = converter({ target: 'draft-07' });
    } else if (schema['~standard'].vendor === 'zod' && '_zod' in schema) {
      // zod 4 releases before Standard JSON Schema support.
      converted = z.toJSONSchema(schema as unknown as z.ZodType, {
        target: 'draft-07',
        io: 'input',
      });
    } else {
      throw new Error(
        `its schema library ("${schema['~standard'].vendor}") does not implement Standard JSON Schema`,
      );
    }
    converted = JSON.parse(JSON.stringify(converted));
  } catch (error) {
    throw new ToolSchemaConversionError({
      message: `The input schema of tool "${name}" cannot be converted to JSON Schema (${messageOf(error)}); use JSON-representable types (no dates, bigints, maps or functions on the input side) or a schema that implements Standard JSON Schema`,
      toolName: name,
      cause: error,
    });
  }
  if (typeof converted !== 'object' || converted === null || Array.isArray(converted)) {
    throw new ToolSchemaConversionError({
      message: `The input schema of tool "${name}" converted to ${JSON.stringify(converted)}, not a JSON Schema object; use an object schema such as z.object({ … })`,
      toolName: name,
    });
  }
  const jsonSchema = converted as JsonObject;
  if (jsonSchema.type !== undefined && jsonSchema.type !== 'object') {
    throw new ToolSchemaConversionError({
      message: `The input schema of tool "${name}" describes ${JSON.stringify(jsonSchema.type)}, but tool input must be an object; wrap it: z.object({ value: … })`,
      toolName: name,
    });
  }
  return jsonSchema;
}

/** A zod schema of the zod 3 API: its Standard Schema vendor is zod, but it has no zod 4 core. */
function isZod3Schema(schema: unknown): boolean {
  const standard = (schema as { '~standard'?: { vendor?: unknown } })['~standard'];
  return standard?.vendor === 'zod' && !('_zod' in (schema as object));
}

function assertToolDefinition(
  definition: Partial<ToolDefinition<StandardSchemaV1, unknown>>,
  name?: string,
): void {
  if (typeof definition !== 'object' || definition === null) {
    fail(name, 'definition', 'is not an object; pass { description, inputSchema, execute }');
  }
  if (typeof definition.description !== 'string' || definition.description.trim() === '') {
    fail(name, 'description', 'has no description; say what the tool does, the model reads it');
  }
  const schema = definition.inputSchema as { '~standard'?: { validate?: unknown } } | undefined;
  if (
    (typeof schema !== 'object' && typeof schema !== 'function') ||
    schema === null ||
    typeof schema['~standard']?.validate !== 'function'
  ) {
    fail(
      name,
      'inputSchema',
      'has an inputSchema that is not a Standard Schema; pass a zod schema',
    );
  }
  if (isZod3Schema(definition.inputSchema)) {
    fail(
      name,
      'inputSchema',
      "has a zod 3 schema (zod 3, or zod 4's \"zod/v3\"), which turnlog cannot turn into the JSON Schema the model needs; use zod 4: import { z } from 'zod' with zod ^4.1.8",
    );
  }
  if (typeof definition.execute !== 'function') {
    fail(name, 'execute', 'has an execute that is not a function');
  }
  const { permission, secrets } = definition;
  for (const field of ['timeoutMs', 'reconcileTimeoutMs'] as const) {
    const value = definition[field];
    if (value !== undefined && !isTimeout(value)) {
      fail(
        name,
        field,
        `has ${field} ${String(value)}; use a whole number of milliseconds from 1 to ${maxTimeoutMs}`,
      );
    }
  }
  if (definition.reconcile !== undefined && typeof definition.reconcile !== 'function') {
    fail(name, 'reconcile', 'has a reconcile that is not a function');
  }
  if (definition.idempotent !== undefined && typeof definition.idempotent !== 'boolean') {
    fail(name, 'idempotent', `has idempotent ${String(definition.idempotent)}; use true or false`);
  }
  if (
    permission !== undefined &&
    typeof permission !== 'function' &&
    permission !== 'allow' &&
    permission !== 'ask' &&
    permission !== 'deny'
  ) {
    fail(
      name,
      'permission',
      `has permission ${JSON.stringify(permission)}; use 'allow', 'ask', 'deny' or a function of the input`,
    );
  }
  if (secrets !== undefined && typeof secrets !== 'function') {
    fail(name, 'secrets', 'has secrets that is not a function of the input returning strings');
  }
}

function isTimeout(value: unknown): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 && value <= maxTimeoutMs;
}

function fail(name: string | undefined, field: string, problem: string): never {
  const subject = name === undefined ? 'defineTool: the tool' : `Tool "${name}"`;
  throw new ToolDefinitionError({ message: `${subject} ${problem}`, toolName: name, field });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
