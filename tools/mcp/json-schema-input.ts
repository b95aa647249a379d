import { createContext, Script } from 'node:vm';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { JsonObject } from '../../events/json.ts';
import type { StandardSchemaV1 } from '../tool.ts';
import { McpToolsError } from './mcp-client.ts';

/**
 * A tool input schema built from a JSON Schema, as an MCP server sends it: ajv validates, and
 * the schema itself is what the model is shown (Standard JSON Schema's `jsonSchema.input`).
 */
export type JsonSchemaInput = StandardSchemaV1<JsonObject, JsonObject> & {
  readonly '~standard': { readonly jsonSchema: { input(): JsonObject; output(): JsonObject } };
};

/** Compiles JSON Schemas into validators; throws, naming the problem, for one it cannot use. */
export type JsonSchemaCompiler = (schema: JsonObject) => ValidateFunction;

type AjvClass = typeof import('ajv').Ajv;

const importAjv = () =>
  Promise.all([
    import('ajv'),
    import('ajv/dist/2019.js'),
    import('ajv/dist/2020.js'),
    import('ajv-formats'),
  ]);

const draft2020 = /^https:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/;
const draft2019 = /^https:\/\/json-schema\.org\/draft\/2019-09\/schema#?$/;
const draft07 = /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/;

/**
 * Loads ajv (which `@modelcontextprotocol/sdk` depends on) and returns a compiler that picks the
 * JSON Schema draft from each schema's `$schema`: 2020-12, 2019-09 or draft-07; a schema without
 * `$schema` is 2020-12, the MCP default, or draft-07 when it only compiles as draft-07 (older
 * servers). Formats (`email`, `uri`, `date-time`, …) are checked with ajv-formats. Nothing is
 * coerced, defaulted or removed: a valid input is sent exactly as the model wrote it.
 */
export async function loadJsonSchemaCompiler(): Promise<JsonSchemaCompiler> {
  let modules: Awaited<ReturnType<typeof importAjv>>;
  try {
    modules = await importAjv();
  } catch (error) {
    throw new McpToolsError({
      message:
        'mcpTools validates tool input with ajv and ajv-formats, which were not found; install them (npm install ajv ajv-formats; @modelcontextprotocol/sdk depends on both)',
      cause: error,
    });
  }
  const [{ Ajv }, { Ajv2019 }, { Ajv2020 }, formats] = modules;
  // ajv-formats is CommonJS: its plugin is the module itself or its `default`.
  const addFormats = (
    typeof formats.default === 'function' ? formats.default : formats.default.default
  ) as (ajv: InstanceType<AjvClass>) => unknown;
  const instances = new Map<AjvClass, InstanceType<AjvClass>>();
  const instance = (Class: AjvClass) => {
    let ajv = instances.get(Class);
    if (ajv === undefined) {
      // strict: false ignores keywords ajv does not know (annotations some servers add);
      // addUsedSchema: false keeps two tools' schemas with one `$id` from clashing.
      ajv = new Class({ strict: false, allErrors: true, addUsedSchema: false, logger: false });
      addFormats(ajv);
      instances.set(Class, ajv);
    }
    return ajv;
  };
  return (schema) => {
    const declared = schema.$schema;
    if (declared === undefined) {
      try {
        return instance(Ajv2020 as unknown as AjvClass).compile(schema);
      } catch (error) {
        try {
          return instance(Ajv).compile(schema);
        } catch {
          throw error;
        }
      }
    }
    const Class =
      typeof declared !== 'string'
        ? undefined
        : draft2020.test(declared)
          ? (Ajv2020 as unknown as AjvClass)
          : draft2019.test(declared)
            ? (Ajv2019 as unknown as AjvClass)
            : draft07.test(declared)
              ? Ajv
              : undefined;
    if (Class === undefined) {
      throw new Error(
        `its $schema ${JSON.stringify(declared)} is not a JSON Schema draft turnlog validates (2020-12, 2019-09, draft-07)`,
      );
    }
    return instance(Class).compile(schema);
  };
}

/**
 * The input schema of an MCP tool. `schema` is shown to the model as it is (with `properties: {}`
 * added when missing, which some providers require and which changes nothing); the same schema
 * validates each call, and an input that does not validate gets one issue per problem, naming
 * the field.
 */
export function jsonSchemaInput({
  schema,
  compile,
}: {
  schema: JsonObject;
  compile: JsonSchemaCompiler;
}): JsonSchemaInput {
  const shown: JsonObject =
    schema.properties === undefined ? { ...schema, properties: {} } : schema;
  const validate = compile(shown);
  return {
    '~standard': {
      version: 1,
      vendor: 'turnlog-json-schema',
      validate(value) {
        const valid = validateWithin(validate, value);
        if (valid === 'too slow') return { issues: [tooSlowIssue] };
        if (valid) return { value: value as JsonObject };
        return { issues: (validate.errors ?? []).map(toIssue) };
      },
      jsonSchema: { input: () => shown, output: () => shown },
    },
  };
}

/**
 * The most milliseconds one input's validation may take. A server's schema is not trusted: a
 * `pattern` that backtracks without end (`^(a+)+$` on 30 characters takes seconds, and blocks the
 * event loop meanwhile) or a quadratic `uniqueItems` over a long array is stopped here, and the
 * input is refused. A sound input takes microseconds.
 */
export const maxValidationMs = 250;

/** One V8 context whose script calls the validator, so that `timeout` can stop it. */
const bounded = createContext({ validate: undefined, value: undefined });
const validateScript = new Script('validate(value)');

/**
 * Runs `validate(value)` under `maxValidationMs`: Node's `vm` timeout interrupts V8 wherever it
 * is, in the middle of a regular expression too (V8's backtracking checks for interrupts), and
 * throws `ERR_SCRIPT_EXECUTION_TIMEOUT`; nothing is left half done (ajv's validator keeps no
 * state but its `errors`).
 */
function validateWithin(validate: ValidateFunction, value: unknown): boolean | 'too slow' {
  bounded.validate = validate;
  bounded.value = value;
  try {
    return validateScript.runInContext(bounded, { timeout: maxValidationMs }) === true;
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') {
      return 'too slow';
    }
    throw error;
  } finally {
    bounded.validate = undefined;
    bounded.value = undefined;
  }
}

const tooSlowIssue: StandardSchemaV1.Issue = {
  message: `checking it against the tool's JSON Schema took longer than ${maxValidationMs} ms (a pattern of the schema that backtracks without end?), so it was refused; send shorter or simpler values`,
};

/** An ajv error as a Standard Schema issue: the path of the field, and what is wrong with it. */
function toIssue(error: ErrorObject): StandardSchemaV1.Issue {
  const path: (string | number)[] = error.instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'))
    .map((segment) => (/^(0|[1-9]\d*)$/.test(segment) ? Number(segment) : segment));
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return {
        path: [...path, String(params.missingProperty)],
        message: 'required, but it is missing',
      };
    case 'additionalProperties':
      return {
        path: [...path, String(params.additionalProperty)],
        message: 'not allowed: the schema has no such property',
      };
    default:
      return { path, message: error.message ?? `fails the schema's "${error.keyword}"` };
  }
}
