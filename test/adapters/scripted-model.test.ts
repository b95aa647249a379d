import {
  APICallError,
  type LanguageModelV4CallOptions,
  type LanguageModelV4StreamPart,
} from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { ScriptExhaustedError } from '../../adapters/adapter-errors.ts';
import { scriptedModel } from '../../adapters/scripted-model.ts';

const call = (text = 'hi', abortSignal?: AbortSignal): LanguageModelV4CallOptions => ({
  prompt: [{ role: 'user', content: [{ type: 'text', text }] }],
  ...(abortSignal ? { abortSignal } : {}),
});

async function parts(stream: ReadableStream<LanguageModelV4StreamPart>) {
  const collected: LanguageModelV4StreamPart[] = [];
  const reader = stream.getReader();
  while (true) {
    const next = await reader.read();
    if (next.done) return collected;
    collected.push(next.value);
  }
}

describe('scriptedModel', () => {
  it('plays a script given as one function of each request and its number', async () => {
    const model = scriptedModel((request, index) => ({
      text: `#${index}: ${JSON.stringify(request.prompt).includes('again') ? 'again' : 'first'}`,
    }));
    const texts: string[] = [];
    for (const text of ['hi', 'again', 'again', 'hi']) {
      const { stream } = await model.doStream(call(text));
      for (const part of await parts(stream))
        if (part.type === 'text-delta') texts.push(part.delta);
    }
    expect(texts).toEqual(['#0: first', '#1: again', '#2: again', '#3: first']);
    expect(model.requests).toHaveLength(4);
  });

  it('streams a step as start, deltas, end and finish parts', async () => {
    const model = scriptedModel([
      {
        reasoning: { text: 'hmm', signature: 'sig' },
        text: ['Hel', 'lo'],
        toolCalls: [{ name: 'readFile', input: { path: 'a.md' } }],
        usage: { inputTokens: 7, outputTokens: 4, reasoningTokens: 1, cachedInputTokens: 2 },
        response: { id: 'resp_x' },
      },
    ]);
    const { stream } = await model.doStream(call());
    expect(await parts(stream)).toEqual([
      { type: 'stream-start', warnings: [] },
      { type: 'response-metadata', id: 'resp_x', modelId: 'scripted-model' },
      { type: 'reasoning-start', id: 'reasoning_1' },
      { type: 'reasoning-delta', id: 'reasoning_1', delta: 'hmm' },
      {
        type: 'reasoning-end',
        id: 'reasoning_1',
        providerMetadata: { scripted: { signature: 'sig' } },
      },
      { type: 'text-start', id: 'text_1' },
      { type: 'text-delta', id: 'text_1', delta: 'Hel' },
      { type: 'text-delta', id: 'text_1', delta: 'lo' },
      { type: 'text-end', id: 'text_1' },
      { type: 'tool-input-start', id: 'call_1', toolName: 'readFile' },
      { type: 'tool-input-delta', id: 'call_1', delta: '{"path":"a.md"}' },
      { type: 'tool-input-end', id: 'call_1' },
      { type: 'tool-call', toolCallId: 'call_1', toolName: 'readFile', input: '{"path":"a.md"}' },
      {
        type: 'finish',
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage: {
          inputTokens: { total: 7, noCache: undefined, cacheRead: 2, cacheWrite: undefined },
          outputTokens: { total: 4, text: undefined, reasoning: 1 },
        },
      },
    ]);
  });

  it('numbers call ids across the script, delivers whole calls as one part, and defaults usage to the chunk count', async () => {
    const model = scriptedModel([
      { toolCalls: [{ name: 'a' }, { name: 'b', input: { x: 1 }, delivery: 'whole' }] },
      { toolCalls: [{ name: 'c', input: { long: 'x'.repeat(20) } }] },
    ]);
    const first = await parts((await model.doStream(call())).stream);
    expect(first.filter((part) => part.type.startsWith('tool'))).toEqual([
      { type: 'tool-input-start', id: 'call_1', toolName: 'a' },
      { type: 'tool-input-delta', id: 'call_1', delta: '{}' },
      { type: 'tool-input-end', id: 'call_1' },
      { type: 'tool-call', toolCallId: 'call_1', toolName: 'a', input: '{}' },
      { type: 'tool-call', toolCallId: 'call_2', toolName: 'b', input: '{"x":1}' },
    ]);
    const second = await parts((await model.doStream(call())).stream);
    const deltas = second.flatMap((part) => (part.type === 'tool-input-delta' ? [part.delta] : []));
    expect(deltas).toEqual(['{"long":"xxxxxxx', 'xxxxxxxxxxxxx"}']);
    expect(second.at(-1)).toMatchObject({ type: 'finish', usage: { outputTokens: { total: 2 } } });
    expect(second.find((part) => part.type === 'tool-call')).toMatchObject({
      toolCallId: 'call_3',
    });
  });

  it('records every call and lets a step depend on the call options', async () => {
    const model = scriptedModel([
      (options) => ({ text: `saw ${options.prompt.length} message(s)` }),
    ]);
    const options = call('question');
    const streamed = await parts((await model.doStream(options)).stream);
    expect(streamed).toContainEqual({
      type: 'text-delta',
      id: 'text_1',
      delta: 'saw 1 message(s)',
    });
    expect(model.requests).toEqual([options]);
  });

  it('throws a ScriptExhaustedError naming how many steps the script had', async () => {
    const model = scriptedModel([{ text: 'only one' }]);
    await model.doStream(call());
    const attempt = model.doStream(call());
    await expect(attempt).rejects.toThrow(
      'scriptedModel: request 2 arrived but the script has only 1 step; add a step for every provider request the test makes',
    );
    await attempt.catch((error) => {
      expect(ScriptExhaustedError.isInstance(error)).toBe(true);
      expect((error as ScriptExhaustedError).stepCount).toBe(1);
    });
  });

  it('rejects a request with an APICallError carrying status, headers and body', async () => {
    const model = scriptedModel([
      {
        error: {
          status: 429,
          headers: { 'retry-after': '3' },
          body: { error: { code: 'rate_limit_exceeded' } },
        },
      },
    ]);
    const error = await model.doStream(call()).catch((thrown: unknown) => thrown);
    expect(APICallError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({
      statusCode: 429,
      responseHeaders: { 'retry-after': '3' },
      responseBody: '{"error":{"code":"rate_limit_exceeded"}}',
      isRetryable: true,
    });
  });

  it('plays raw parts exactly as given', async () => {
    const raw: LanguageModelV4StreamPart[] = [
      { type: 'tool-input-delta', id: 'x', delta: '{' },
      { type: 'finish', finishReason: { unified: 'other', raw: 'weird' }, usage: usage() },
    ];
    const model = scriptedModel([{ parts: raw }]);
    expect(await parts((await model.doStream(call())).stream)).toEqual(raw);
  });

  it('breaks the stream like a socket reset after the output of a disconnect step', async () => {
    const model = scriptedModel([{ text: 'par', disconnect: true }]);
    const reader = (await model.doStream(call())).stream.getReader();
    const seen: string[] = [];
    const error = await (async () => {
      while (true) seen.push((await reader.read()).value?.type ?? 'done');
    })().catch((thrown: unknown) => thrown);
    expect(seen).toEqual([
      'stream-start',
      'response-metadata',
      'text-start',
      'text-delta',
      'text-end',
    ]);
    expect(error).toMatchObject({ message: 'terminated', cause: { code: 'ECONNRESET' } });
  });

  it('stalls a stall step until the request is aborted', async () => {
    const controller = new AbortController();
    const model = scriptedModel([{ stall: true }]);
    const reader = (await model.doStream(call('x', controller.signal))).stream.getReader();
    await reader.read(); // stream-start
    await reader.read(); // response-metadata
    const pending = reader.read();
    controller.abort(new Error('stopped by test'));
    await expect(pending).rejects.toThrow('stopped by test');
  });

  it('plays the same script through doGenerate', async () => {
    const model = scriptedModel([
      {
        reasoning: { text: 'hmm', signature: 'sig' },
        text: ['a', 'b'],
        toolCalls: [{ id: 'c1', name: 'readFile', input: { path: 'a.md' } }],
        finishReason: { unified: 'tool-calls', raw: 'tool_use' },
        usage: { inputTokens: 1, outputTokens: 2 },
      },
    ]);
    const result = await model.doGenerate(call());
    expect(result).toEqual({
      content: [
        { type: 'reasoning', text: 'hmm', providerMetadata: { scripted: { signature: 'sig' } } },
        { type: 'text', text: 'ab' },
        { type: 'tool-call', toolCallId: 'c1', toolName: 'readFile', input: '{"path":"a.md"}' },
      ],
      finishReason: { unified: 'tool-calls', raw: 'tool_use' },
      usage: usage({ input: 1, output: 2 }),
      response: { id: 'resp_1', modelId: 'scripted-model' },
      warnings: [],
    });
  });
});

function usage({ input, output }: { input?: number; output?: number } = {}) {
  return {
    inputTokens: { total: input, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: output, text: undefined, reasoning: undefined },
  };
}
