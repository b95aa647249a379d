import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assignToolNames, mcpToolName } from '../../../tools/mcp/mcp-tool-names.ts';
import { ToolDefinitionError } from '../../../tools/tool-errors.ts';

const providerName = /^[a-zA-Z0-9_-]{1,64}$/;

describe('mcpToolName', () => {
  it('keeps a name providers accept, prefixed', () => {
    expect(mcpToolName({ prefix: '', name: 'read_file' })).toBe('read_file');
    expect(mcpToolName({ prefix: 'fs_', name: 'read-file' })).toBe('fs_read-file');
  });

  it('replaces every other character with "_"', () => {
    expect(mcpToolName({ prefix: '', name: 'notes.archive' })).toBe('notes_archive');
    expect(mcpToolName({ prefix: 'gh_', name: 'repos/list issues:all' })).toBe(
      'gh_repos_list_issues_all',
    );
    expect(mcpToolName({ prefix: '', name: 'café' })).toBe('caf_');
  });

  it('shortens a name over 64 characters to 55 and a hash of the MCP name', () => {
    const name = `${'a'.repeat(60)}.${'b'.repeat(40)}`;
    expect(mcpToolName({ prefix: 'x_', name })).toBe(`x_${'a'.repeat(53)}_aa9e392d`);
    expect(mcpToolName({ prefix: 'x_', name })).toHaveLength(64);
    expect(mcpToolName({ prefix: '', name: 'a'.repeat(64) })).toBe('a'.repeat(64));
  });

  it('always gives a name providers accept, the same for the same input', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[a-zA-Z0-9_-]{0,32}$/),
        fc.string({ minLength: 1, maxLength: 200, unit: 'grapheme' }),
        (prefix, name) => {
          const mapped = mcpToolName({ prefix, name });
          expect(mapped).toMatch(providerName);
          expect(mapped.startsWith(prefix)).toBe(true);
          expect(mcpToolName({ prefix, name })).toBe(mapped);
          if (providerName.test(`${prefix}${name}`)) expect(mapped).toBe(`${prefix}${name}`);
        },
      ),
    );
  });
});

describe('assignToolNames', () => {
  it('maps each MCP name, in order', () => {
    expect([...assignToolNames({ names: ['a.b', 'c'], prefix: 'p_', server: '"s"' })]).toEqual([
      ['a.b', 'p_a_b'],
      ['c', 'p_c'],
    ]);
  });

  it('refuses two MCP names that map to one tool name, naming both', () => {
    const collide = () =>
      assignToolNames({ names: ['a_b', 'x', 'a.b'], prefix: '', server: '"s"' });
    expect(collide).toThrow(ToolDefinitionError);
    expect(collide).toThrow(
      'The MCP tools "a_b" and "a.b" of server "s" both map to the tool name "a_b" (characters outside letters, digits, "_" and "-" become "_"; rename gives names as they are); take only one of them with the include option, or rename one',
    );
  });
});
