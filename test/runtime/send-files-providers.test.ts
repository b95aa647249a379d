import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { describe, expect, it } from 'vitest';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { createFakeFetch, loadFixture, sse } from '../helpers/fake-fetch.ts';
import { testRuntime } from './runtime-helpers.ts';

/** A 1×1 PNG, base64. */
const pixel =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const files = [{ mediaType: 'image/png', data: pixel, filename: 'pixel.png' }];

describe('an attached image, through the real provider packages', () => {
  it('reaches OpenAI Chat Completions as an image_url content part of the user message', async () => {
    const fake = createFakeFetch(() => sse(loadFixture('openai-chat-text'), { done: true }));
    const openai = createOpenAI({ apiKey: 'test', fetch: fake.fetch });
    const runtime = testRuntime(memoryStore(), { model: openai.chat('gpt-test') });
    await (await runtime.send({ sessionId: 's', text: 'What is this?', files })).done;
    const body = fake.requests[0]?.body as { messages: { role: string; content: unknown }[] };
    expect(body.messages.find((message) => message.role === 'user')?.content).toEqual([
      { type: 'text', text: 'What is this?' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${pixel}` } },
    ]);
    await runtime.close();
  });

  it('reaches Anthropic as a base64 image block of the user message', async () => {
    const fake = createFakeFetch(() => sse(loadFixture('anthropic-text')));
    const anthropic = createAnthropic({ apiKey: 'test', fetch: fake.fetch });
    const runtime = testRuntime(memoryStore(), { model: anthropic('claude-sonnet-4-5') });
    await (await runtime.send({ sessionId: 's', text: 'What is this?', files })).done;
    const body = fake.requests[0]?.body as { messages: { role: string; content: unknown[] }[] };
    expect(body.messages[0]?.content).toEqual([
      { type: 'text', text: 'What is this?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: pixel } },
    ]);
    await runtime.close();
  });
});
