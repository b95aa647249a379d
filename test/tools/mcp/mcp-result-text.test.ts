import { describe, expect, it } from 'vitest';
import { mcpResultText } from '../../../tools/mcp/mcp-result-text.ts';

describe('mcpResultText', () => {
  it('gives nothing for a result without content (the runtime says "(no output)")', () => {
    expect(mcpResultText({ content: [] })).toBeUndefined();
    expect(mcpResultText({})).toBeUndefined();
  });

  it('adds structured content as JSON unless a text block already holds the same JSON', () => {
    const structuredContent = { b: [1, 2], a: 'x' };
    expect(
      mcpResultText({
        content: [{ type: 'text', text: '{\n  "a": "x",\n  "b": [1, 2]\n}' }],
        structuredContent,
      }),
    ).toBe('{\n  "a": "x",\n  "b": [1, 2]\n}');
    expect(mcpResultText({ content: [], structuredContent })).toBe('{"b":[1,2],"a":"x"}');
    expect(mcpResultText({ content: [{ type: 'text', text: 'summary' }], structuredContent })).toBe(
      'summary\n{"b":[1,2],"a":"x"}',
    );
  });

  it('leaves out structured content whose every value is a string the text already holds', () => {
    const file = 'line 1\nline 2';
    expect(
      mcpResultText({
        content: [{ type: 'text', text: file }],
        structuredContent: { content: file },
      }),
    ).toBe(file);
    expect(
      mcpResultText({
        content: [{ type: 'text', text: 'a and b' }],
        structuredContent: { names: ['a', 'b'], count: 2 },
      }),
    ).toBe('a and b\n{"names":["a","b"],"count":2}');
    expect(
      mcpResultText({
        content: [{ type: 'text', text: 'a' }],
        structuredContent: { names: ['a', 'c'] },
      }),
    ).toBe('a\n{"names":["a","c"]}');
  });

  it('summarizes what it cannot show instead of dropping it', () => {
    expect(
      mcpResultText({
        content: [
          { type: 'image', data: 'AAAA' },
          { type: 'audio', mimeType: 'audio/mpeg' },
          { type: 'resource', resource: { uri: 'file:///a.bin', blob: 'AAECAw==' } },
          {
            type: 'resource_link',
            uri: 'file:///r.pdf',
            name: 'r.pdf',
            title: 'The report',
            mimeType: 'application/pdf',
            size: 1024,
          },
          { type: 'resource_link', uri: 'file:///same', name: 'file:///same' },
          { type: 'video', data: 'AAAA' },
          'stray',
        ],
      }),
    ).toBe(
      [
        '[image: unknown type, 3 bytes, not shown]',
        '[audio: audio/mpeg, size unknown, not shown]',
        '[resource: file:///a.bin, unknown type, 4 bytes, not shown]',
        '[resource link: file:///r.pdf, "The report", application/pdf, 1024 bytes]',
        '[resource link: file:///same]',
        '["video" content, not shown]',
        '[a content block that is not an object: "stray"]',
      ].join('\n'),
    );
  });

  it('shows the toolResult of servers on protocol 2024-10-07', () => {
    expect(mcpResultText({ toolResult: { ok: true } })).toBe('{"ok":true}');
  });
});
