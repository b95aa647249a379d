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

  it("replaces every repeat of a block's data with its summary, and base64 blobs of structured content", () => {
    const image = 'iVBO'.repeat(30);
    const blob = 'QUJD'.repeat(300);
    expect(
      mcpResultText({
        content: [
          { type: 'text', text: `inline: ${image}.` },
          { type: 'image', data: image, mimeType: 'image/png' },
          // Data shorter than 64 characters is replaced only where it is a whole string.
          { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' },
          { type: 'text', text: 'AAAA stays in text' },
        ],
        structuredContent: { image, sound: 'AAAA', raw: blob, url: `data:;base64,${blob}` },
      }),
    ).toBe(
      [
        'inline: [image: image/png, 90 bytes, not shown].',
        '[image: image/png, 90 bytes, not shown]',
        '[audio: audio/wav, 3 bytes, not shown]',
        'AAAA stays in text',
        JSON.stringify({
          image: '[image: image/png, 90 bytes, not shown]',
          sound: '[audio: audio/wav, 3 bytes, not shown]',
          raw: '[base64 data, 900 bytes, not shown]',
          url: '[base64 data, 900 bytes, not shown]',
        }),
      ].join('\n'),
    );
    // Under minBase64Chars, or with a space, a string is text.
    const short = 'QUJD'.repeat(100);
    expect(mcpResultText({ content: [], structuredContent: { short, words: `${blob} x` } })).toBe(
      JSON.stringify({ short, words: `${blob} x` }),
    );
  });

  it('shows the toolResult of servers on protocol 2024-10-07', () => {
    expect(mcpResultText({ toolResult: { ok: true } })).toBe('{"ok":true}');
  });
});
