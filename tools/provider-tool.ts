import type { JsonObject, JsonValue } from '../events/json.ts';
import type { ProviderToolDefinition } from '../events/messages.ts';
import { InvalidArgumentError } from '../runtime-errors.ts';
import { assertToolName } from './define-tool.ts';
import type { Tool, ToolSet } from './tool.ts';
import { ToolDefinitionError } from './tool-errors.ts';

/**
 * A tool a provider package defines and runs itself, as its factory returns it
 * (`openai.tools.webSearch()`, `anthropic.tools.webSearch_20250305()`,
 * `google.tools.googleSearch()`): the shape turnlog reads, no SDK type.
 */
export interface ProviderTool {
  type: 'provider';
  /** `<provider>.<tool>`, e.g. `openai.web_search`. */
  id: `${string}.${string}`;
  args: Record<string, unknown>;
  /** True for tools the provider executes; false for ones the app must run (Anthropic's bash). */
  isProviderExecuted: boolean;
}

/** What `createRuntime({ tools })` takes: turnlog's own tools and provider-executed ones. */
export type RuntimeTools = Record<string, Tool | ProviderTool>;

/** The tools of a `RuntimeTools` that turnlog executes (its provider tools left out). */
export type OwnTools<TTools extends RuntimeTools> = {
  [TName in keyof TTools as TTools[TName] extends Tool ? TName : never]: Extract<
    TTools[TName],
    Tool
  >;
};

/** True for a provider tool object (`type: 'provider'`), whether or not it is usable. */
export function isProviderTool(tool: unknown): tool is ProviderTool {
  return (
    typeof tool === 'object' && tool !== null && (tool as { type?: unknown }).type === 'provider'
  );
}

/**
 * Splits a runtime's tools into turnlog's own (executed by the tool runtime) and the provider's
 * (sent with each request, never executed by turnlog). Throws `ToolDefinitionError` for a
 * provider tool the app would have to execute, or whose arguments are not plain JSON.
 *
 * @example
 * splitTools({ getWeather, webSearch: openai.tools.webSearch() });
 * // { own: { getWeather }, provider: [{ type: 'provider', name: 'webSearch', id: 'openai.web_search', args: {} }] }
 */
export function splitTools(tools: RuntimeTools): {
  own: ToolSet;
  provider: ProviderToolDefinition[];
} {
  const prototype: unknown = Object.getPrototypeOf(tools);
  if (prototype !== Object.prototype && prototype !== null) {
    // `{ __proto__: tool }` in an object literal makes the tool the record's prototype.
    throw new InvalidArgumentError({
      message:
        'The tools are not a plain object: their prototype is another object (a key written `__proto__: …` in an object literal sets the prototype instead of naming a tool); pass { name: tool, … } with names other than __proto__',
      argument: 'tools',
    });
  }
  const own: ToolSet = {};
  const provider: ProviderToolDefinition[] = [];
  for (const [name, tool] of Object.entries(tools)) {
    // Before the name is used as a key: `own.__proto__ = tool` would set own's prototype.
    assertToolName(name);
    if (isProviderTool(tool)) provider.push(toProviderToolDefinition(name, tool));
    else own[name] = tool;
  }
  return { own, provider };
}

function toProviderToolDefinition(name: string, tool: ProviderTool): ProviderToolDefinition {
  assertToolName(name);
  const fail = (field: string, problem: string): never => {
    throw new ToolDefinitionError({ message: `Tool "${name}" ${problem}`, toolName: name, field });
  };
  if (typeof tool.id !== 'string' || !/^[^.]+\..+$/.test(tool.id)) {
    fail(
      'id',
      'is a provider tool without a "<provider>.<tool>" id; create it with the provider package\'s tool factory, e.g. openai.tools.webSearch()',
    );
  }
  if (tool.isProviderExecuted !== true) {
    fail(
      'isProviderExecuted',
      `(${tool.id}) is a provider-defined tool that your app must execute, and turnlog runs only its own tools; define it with defineTool({ description, inputSchema, execute }) instead`,
    );
  }
  const args = plainJson(tool.args ?? {});
  if (args === undefined || typeof args !== 'object' || args === null || Array.isArray(args)) {
    fail(
      'args',
      `(${tool.id}) has arguments that are not plain JSON values (a function, a class instance, NaN); pass plain values`,
    );
  }
  return { type: 'provider', name, id: tool.id, args: args as JsonObject };
}

/** A copy of `value` as plain JSON (object entries that are `undefined` dropped), or `undefined`. */
function plainJson(value: unknown): JsonValue | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (Array.isArray(value)) {
    const items = value.map(plainJson);
    return items.some((item) => item === undefined) ? undefined : (items as JsonValue[]);
  }
  if (typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) {
    return undefined;
  }
  const copy: JsonObject = {};
  for (const [key, entry] of Object.entries(value)) {
    if (entry === undefined) continue;
    const plain = plainJson(entry);
    if (plain === undefined) return undefined;
    copy[key] = plain;
  }
  return copy;
}
