import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../events/json.ts';
import { jsonSchemaInput, loadJsonSchemaCompiler } from '../../../tools/mcp/json-schema-input.ts';
import { validateToolInput } from '../../../tools/validate-input.ts';

const compile = await loadJsonSchemaCompiler();

/** Validates `raw` against `schema` as the tool runtime does, for tool "t". */
async function check(schema: JsonObject, raw: unknown) {
  const inputSchema = jsonSchemaInput({ schema, compile });
  const result = await validateToolInput({
    name: 't',
    tool: { inputSchema, secrets: () => [] },
    raw,
  });
  return result.status === 'valid' ? { valid: result.value } : result.text;
}

const invalid = (...lines: string[]) =>
  [
    'Invalid input for tool "t"; the call was not run. Fix these fields and call it again:',
    ...lines,
  ].join('\n');

describe('jsonSchemaInput', () => {
  it('shows the model the schema as sent, adding only an empty properties object when missing', () => {
    const schema = { type: 'object', $schema: 'http://json-schema.org/draft-07/schema#' };
    const shown = jsonSchemaInput({ schema, compile })['~standard'].jsonSchema.input();
    expect(shown).toEqual({ ...schema, properties: {} });
    const full = { type: 'object', properties: { a: { type: 'string' } } };
    expect(jsonSchemaInput({ schema: full, compile })['~standard'].jsonSchema.input()).toBe(full);
  });

  it('passes a valid input through unchanged: no defaults filled, nothing coerced or removed', async () => {
    const schema = {
      type: 'object',
      properties: { n: { type: 'number' }, mode: { type: 'string', default: 'fast' } },
    };
    expect(await check(schema, { n: 1, extra: true })).toEqual({ valid: { n: 1, extra: true } });
    expect(await check(schema, { n: '1' })).toBe(invalid('- n: must be number'));
  });

  it('reads a schema without $schema as 2020-12: prefixItems, $defs and $ref, formats, anyOf with null', async () => {
    const schema = {
      type: 'object',
      $defs: { when: { type: 'string', format: 'date-time' } },
      properties: {
        at: { $ref: '#/$defs/when' },
        pair: { type: 'array', prefixItems: [{ type: 'number' }, { type: 'string' }] },
        note: { anyOf: [{ type: 'string' }, { type: 'null' }] },
      },
      required: ['at'],
      additionalProperties: false,
    };
    expect(await check(schema, { at: '2026-11-01T10:00:00Z', pair: [1, 'a'], note: null })).toEqual(
      { valid: { at: '2026-11-01T10:00:00Z', pair: [1, 'a'], note: null } },
    );
    expect(await check(schema, { at: 'tomorrow', pair: ['a', 1], note: 3, more: 1 })).toBe(
      invalid(
        '- more: not allowed: the schema has no such property',
        '- at: must match format "date-time"',
        '- pair[0]: must be number',
        '- pair[1]: must be string',
        '- note: must be string',
        '- note: must be null',
        '- note: must match a schema in anyOf',
      ),
    );
    expect(await check(schema, {})).toBe(invalid('- at: required, but it is missing'));
  });

  it('reads draft-07 when the schema says so, and an older tuple schema without $schema too', async () => {
    const tuple = {
      type: 'object',
      properties: { pair: { type: 'array', items: [{ type: 'number' }, { type: 'string' }] } },
    };
    for (const schema of [
      { ...tuple, $schema: 'http://json-schema.org/draft-07/schema#' },
      tuple,
    ]) {
      expect(await check(schema, { pair: [1, 'a'] })).toEqual({ valid: { pair: [1, 'a'] } });
      expect(await check(schema, { pair: ['a'] })).toBe(invalid('- pair[0]: must be number'));
    }
  });

  it('reads 2019-09 when the schema says so', async () => {
    const schema = {
      $schema: 'https://json-schema.org/draft/2019-09/schema',
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'string' } },
      dependentRequired: { a: ['b'] },
    };
    expect(await check(schema, { a: 'x' })).toBe(
      invalid('- (input): must have property b when property a is present'),
    );
    expect(await check(schema, { a: 'x', b: 'y' })).toEqual({ valid: { a: 'x', b: 'y' } });
  });

  it('refuses a schema it cannot validate, saying why', () => {
    const refuse = (schema: JsonObject) => () => jsonSchemaInput({ schema, compile });
    expect(refuse({ $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' })).toThrow(
      'its $schema "http://json-schema.org/draft-04/schema#" is not a JSON Schema draft turnlog validates (2020-12, 2019-09, draft-07)',
    );
    expect(refuse({ type: 'object', properties: { a: { $ref: '#/$defs/missing' } } })).toThrow(
      "can't resolve reference #/$defs/missing",
    );
    expect(refuse({ type: 'object', properties: { a: { type: 'text' } } })).toThrow(
      'schema is invalid',
    );
  });
});
