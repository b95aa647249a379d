import type { LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { isOutput, streamPartOutput } from '../../adapters/stream-parts.ts';

const usage = {
  inputTokens: { total: 1, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: undefined, reasoning: undefined },
};

/** One part of every type the table classifies, as a provider package would stream it. */
const parts: LanguageModelV4StreamPart[] = [
  { type: 'stream-start', warnings: [] },
  { type: 'response-metadata', id: 'r1', modelId: 'm' },
  { type: 'text-start', id: 't' },
  { type: 'text-delta', id: 't', delta: 'Hi' },
  { type: 'text-end', id: 't' },
  { type: 'reasoning-start', id: 'r' },
  { type: 'reasoning-delta', id: 'r', delta: 'hmm' },
  { type: 'reasoning-end', id: 'r' },
  { type: 'tool-input-start', id: 'c', toolName: 'add' },
  { type: 'tool-input-delta', id: 'c', delta: '{}' },
  { type: 'tool-input-end', id: 'c' },
  { type: 'tool-call', toolCallId: 'c', toolName: 'add', input: '{}' },
  { type: 'tool-result', toolCallId: 's', toolName: 'webSearch', result: [] },
  { type: 'tool-approval-request', approvalId: 'a', toolCallId: 's' },
  {
    type: 'file',
    mediaType: 'image/png',
    data: { type: 'data', data: 'AA==' },
  } as LanguageModelV4StreamPart,
  {
    type: 'reasoning-file',
    mediaType: 'image/png',
    data: { type: 'data', data: 'AA==' },
  } as LanguageModelV4StreamPart,
  { type: 'source', sourceType: 'url', id: 'src', url: 'https://example.test' },
  { type: 'custom', kind: 'anthropic.message_start' },
  { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
  { type: 'error', error: new Error('x') },
  { type: 'ping' } as LanguageModelV4StreamPart,
  { type: 'raw', rawValue: {} },
];

describe('stream part classification', () => {
  it('classifies every part type of the AI SDK stream, each as output or not', () => {
    expect(parts.map((part) => part.type).sort()).toEqual(Object.keys(streamPartOutput).sort());
    expect(Object.fromEntries(parts.map((part) => [part.type, isOutput(part)]))).toEqual({
      'stream-start': false,
      'response-metadata': false,
      'text-start': false,
      'text-delta': true,
      'text-end': false,
      'reasoning-start': false,
      'reasoning-delta': true,
      'reasoning-end': false,
      'tool-input-start': false,
      'tool-input-delta': true,
      'tool-input-end': false,
      'tool-call': false,
      'tool-result': true,
      'tool-approval-request': true,
      file: true,
      'reasoning-file': true,
      source: true,
      custom: false,
      finish: false,
      error: false,
      ping: false,
      raw: false,
    });
  });

  it('counts a delta only once it carries a character', () => {
    expect(isOutput({ type: 'text-delta', id: 't', delta: '' })).toBe(false);
    expect(isOutput({ type: 'reasoning-delta', id: 'r', delta: '' })).toBe(false);
    expect(isOutput({ type: 'tool-input-delta', id: 'c', delta: '' })).toBe(false);
  });

  it('counts a part type it does not know as output, so no retry is risked', () => {
    expect(isOutput({ type: 'hologram', id: 'h' } as unknown as LanguageModelV4StreamPart)).toBe(
      true,
    );
    expect(isOutput({ type: 'toString' } as unknown as LanguageModelV4StreamPart)).toBe(true);
  });
});
