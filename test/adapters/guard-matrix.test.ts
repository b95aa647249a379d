import type { LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { aiSdkAdapter } from '../../adapters/ai-sdk-adapter.ts';
import type { ModelStepCompletion, ModelStepRequest } from '../../adapters/model-adapter.ts';
import { type ScriptedStep, scriptedModel } from '../../adapters/scripted-model.ts';
import type { FinishReason, ToolCallRecord } from '../../events/facts.ts';

const tools: ModelStepRequest['tools'] = ['readFile', 'listFiles'].map((name) => ({
  name,
  description: `the ${name} tool`,
  inputSchema: { type: 'object' },
}));

function request(overrides: Partial<ModelStepRequest> = {}): ModelStepRequest {
  return {
    messages: [{ role: 'user', content: 'go' }],
    tools,
    abortSignal: new AbortController().signal,
    ...overrides,
  };
}

async function runStep(step: ScriptedStep, overrides: Partial<ModelStepRequest> = {}) {
  const adapter = aiSdkAdapter(scriptedModel([step]));
  return adapter.step(request(overrides)).completion;
}

function proven(
  completion: ModelStepCompletion,
): Pick<ToolCallRecord, 'callId' | 'name' | 'input' | 'proof'>[] {
  if (completion.type !== 'step.completed') return [];
  return completion.toolCalls
    .filter((call) => call.proof !== null)
    .map(({ callId, name, input, proof }) => ({ callId, name, input, proof }));
}

function withheld(completion: ModelStepCompletion): string[] {
  if (completion.type !== 'step.completed') return [];
  return completion.toolCalls.filter((call) => call.proof === null).map((call) => call.callId);
}

/** Raw parts of one call: start, deltas, end, resolution — each can be left out. */
function callParts({
  id = 'call_1',
  name = 'readFile',
  resolvedName = name,
  deltas = ['{"path":', '"a.md"}'],
  input = deltas.join(''),
  start = true,
  end = true,
}: {
  id?: string;
  name?: string;
  resolvedName?: string;
  deltas?: string[];
  input?: string;
  start?: boolean;
  end?: boolean;
} = {}): LanguageModelV4StreamPart[] {
  return [
    ...(start ? [{ type: 'tool-input-start', id, toolName: name } as const] : []),
    ...deltas.map((delta) => ({ type: 'tool-input-delta', id, delta }) as const),
    ...(end ? [{ type: 'tool-input-end', id } as const] : []),
    { type: 'tool-call', toolCallId: id, toolName: resolvedName, input },
  ];
}

function finishPart(finishReason: FinishReason, outputTokens = 5): LanguageModelV4StreamPart {
  return {
    type: 'finish',
    finishReason: {
      unified: finishReason.unified === 'unknown' ? 'other' : finishReason.unified,
      raw: finishReason.raw,
    },
    usage: {
      inputTokens: { total: 10, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: outputTokens, text: undefined, reasoning: undefined },
    },
  };
}

const readA = { callId: 'call_1', name: 'readFile', input: { path: 'a.md' }, proof: 'raw-bytes' };

describe('the tool-call guard through aiSdkAdapter', () => {
  it('proves a streamed call that finished with stop, with the value from its bytes', async () => {
    const completion = await runStep({
      parts: [...callParts(), finishPart({ unified: 'stop', raw: 'stop' })],
    });
    expect(proven(completion)).toEqual([readA]);
  });

  it('proves a streamed call that finished with tool-calls', async () => {
    const completion = await runStep({
      toolCalls: [{ name: 'readFile', input: { path: 'a.md' } }],
    });
    expect(completion).toMatchObject({ finishReason: { unified: 'tool-calls' } });
    expect(proven(completion)).toEqual([readA]);
  });

  it.each([
    [{ unified: 'length', raw: 'max_tokens' }],
    [{ unified: 'content-filter', raw: 'SAFETY' }],
  ] satisfies [FinishReason][])(
    'withholds a streamed call that finished with %j',
    async (reason) => {
      const completion = await runStep({ parts: [...callParts(), finishPart(reason)] });
      expect(completion.type).toBe('step.completed');
      expect(proven(completion)).toEqual([]);
      expect(withheld(completion)).toEqual(['call_1']);
    },
  );

  it('proves no call when the finish reason is error (the step fails as an interrupted stream)', async () => {
    const completion = await runStep({
      parts: [...callParts(), finishPart({ unified: 'error', raw: 'error' })],
    });
    expect(completion).toMatchObject({
      type: 'step.failed',
      error: { kind: 'stream_interrupted' },
    });
    expect(proven(completion)).toEqual([]);
  });

  it('proves no call when the stream carried an error part', async () => {
    const completion = await runStep({
      parts: [
        ...callParts(),
        { type: 'error', error: { message: 'upstream broke', code: 'server_error' } },
        finishPart({ unified: 'tool-calls', raw: 'tool_calls' }),
      ],
    });
    expect(completion).toMatchObject({ type: 'step.failed', observedOutput: true });
    expect(proven(completion)).toEqual([]);
  });

  it('proves no call when the request is aborted after the call streamed', async () => {
    const controller = new AbortController();
    const adapter = aiSdkAdapter(
      scriptedModel([{ toolCalls: [{ name: 'readFile', input: { path: 'a.md' } }], stall: true }]),
    );
    const step = adapter.step(request({ abortSignal: controller.signal }));
    for await (const event of step.events) {
      if (event.type === 'tool.input.delta') controller.abort();
    }
    const completion = await step.completion;
    expect(completion).toMatchObject({
      type: 'step.failed',
      error: { kind: 'aborted', retryable: false },
      observedOutput: true,
    });
    expect(proven(completion)).toEqual([]);
  });

  it('proves no call when the stream ended without a finish', async () => {
    const completion = await runStep({ parts: callParts() });
    expect(completion).toMatchObject({
      type: 'step.failed',
      error: { kind: 'stream_interrupted' },
    });
    expect(proven(completion)).toEqual([]);
  });

  it('proves a call whose ambiguous finish reason has the raw spelling stop', async () => {
    const completion = await runStep({
      parts: [...callParts(), finishPart({ unified: 'other', raw: 'stop' })],
    });
    expect(completion).toMatchObject({ finishReason: { unified: 'stop', raw: 'stop' } });
    expect(proven(completion)).toEqual([readA]);
  });

  it('fails the step of a call whose ambiguous finish reason has no telling raw spelling', async () => {
    const completion = await runStep({
      parts: [...callParts(), finishPart({ unified: 'other', raw: 'other' })],
    });
    expect(completion).toEqual({
      type: 'step.failed',
      error: {
        kind: 'unknown',
        retryable: true,
        message:
          'The provider finished with reason "other", which does not say the answer is complete; the step\'s output is not used.',
      },
      observedOutput: true,
    });
  });

  it('fails the step of a call whose finish the provider package made up (no raw reason)', async () => {
    const completion = await runStep({
      parts: [...callParts(), finishPart({ unified: 'other', raw: undefined })],
    });
    expect(completion).toEqual({
      type: 'step.failed',
      error: {
        kind: 'stream_interrupted',
        retryable: true,
        message:
          'The provider stream ended without a finish reason of the provider\'s own (reported as "other"), so the response was cut off.',
      },
      observedOutput: true,
    });
  });

  it.each([
    ['truncated JSON bytes', callParts({ deltas: ['{"path":', '"a.m'], input: '{"path":"a.md"}' })],
    ['a missing tool-input-end', callParts({ end: false })],
    [
      'a delta before the start',
      [
        { type: 'tool-input-delta', id: 'call_1', delta: '{' },
        ...callParts({ deltas: ['"path":"a.md"}'], input: '{"path":"a.md"}' }),
      ],
    ],
    [
      'a duplicate start',
      [{ type: 'tool-input-start', id: 'call_1', toolName: 'readFile' }, ...callParts()],
    ],
  ] as [string, LanguageModelV4StreamPart[]][])(
    'withholds a call with %s',
    async (_label, parts) => {
      const completion = await runStep({
        parts: [...parts, finishPart({ unified: 'tool-calls', raw: 'tool_calls' })],
      });
      expect(proven(completion)).toEqual([]);
      expect(withheld(completion)).toEqual(['call_1']);
    },
  );

  it('withholds every call when tool evidence arrives after the finish', async () => {
    const completion = await runStep({
      parts: [
        ...callParts(),
        finishPart({ unified: 'tool-calls', raw: 'tool_calls' }),
        { type: 'tool-input-delta', id: 'call_2', delta: '{}' },
      ],
    });
    expect(proven(completion)).toEqual([]);
    expect(withheld(completion)).toEqual(['call_1']);
  });

  it('withholds every call when the stream reports two finishes', async () => {
    const finish = finishPart({ unified: 'tool-calls', raw: 'tool_calls' });
    const completion = await runStep({ parts: [...callParts(), finish, finish] });
    expect(proven(completion)).toEqual([]);
    expect(withheld(completion)).toEqual(['call_1']);
  });

  it('uses the streamed bytes when the projected input differs from them', async () => {
    const completion = await runStep({
      parts: [
        ...callParts({ deltas: ['{"path":"a.md"}'], input: '{"path":"/etc/passwd"}' }),
        finishPart({ unified: 'stop', raw: 'stop' }),
      ],
    });
    expect(proven(completion)).toEqual([readA]);
  });

  it('withholds a resolved call under an id the stream never started', async () => {
    const completion = await runStep({
      parts: [
        ...callParts(),
        { type: 'tool-call', toolCallId: 'call_9', toolName: 'listFiles', input: '{}' },
        finishPart({ unified: 'tool-calls', raw: 'tool_calls' }),
      ],
    });
    expect(proven(completion)).toEqual([readA]);
    expect(withheld(completion)).toEqual(['call_9']);
  });

  it('withholds a call resolved under a different name than it started with', async () => {
    const completion = await runStep({
      parts: [
        ...callParts({ resolvedName: 'listFiles' }),
        finishPart({ unified: 'stop', raw: 'stop' }),
      ],
    });
    expect(proven(completion)).toEqual([]);
    expect(completion.type === 'step.completed' && completion.toolCalls[0]?.withheld).toBe(
      'This call was not run: it started as tool "readFile" but completed as tool "listFiles". If you still need it, call the tool again.',
    );
  });

  it('proves a call whose resolved name differs only by letter case, under the started name', async () => {
    const completion = await runStep({
      parts: [
        ...callParts({ resolvedName: 'READFILE' }),
        finishPart({ unified: 'stop', raw: 'stop' }),
      ],
    });
    expect(proven(completion)).toEqual([readA]);
  });

  it('proves a zero-delta sibling of a streamed call with {} whatever its projected input says', async () => {
    const completion = await runStep({
      parts: [
        ...callParts(),
        ...callParts({ id: 'call_2', name: 'listFiles', deltas: [], input: '{"dir":"/"}' }),
        finishPart({ unified: 'tool-calls', raw: 'tool_calls' }),
      ],
    });
    expect(proven(completion)).toEqual([
      readA,
      { callId: 'call_2', name: 'listFiles', input: {}, proof: 'atomic' },
    ]);
  });

  it.each([
    [{ unified: 'stop', raw: 'stop' }, true],
    [{ unified: 'tool-calls', raw: 'tool_use' }, true],
    [{ unified: 'length', raw: 'length' }, false],
    [{ unified: 'other', raw: 'other' }, false],
  ] satisfies [FinishReason, boolean][])(
    'proves whole calls by the whole-request fallback only on a clean finish (%j)',
    async (reason, provesCalls) => {
      const completion = await runStep({
        toolCalls: [
          { name: 'readFile', input: { path: 'a.md' }, delivery: 'whole' },
          { name: 'listFiles', input: { dir: 'src' }, delivery: 'whole' },
        ],
        finishReason: reason,
      });
      expect(proven(completion)).toEqual(
        provesCalls
          ? [
              { ...readA, proof: 'whole-request' },
              {
                callId: 'call_2',
                name: 'listFiles',
                input: { dir: 'src' },
                proof: 'whole-request',
              },
            ]
          : [],
      );
    },
  );

  it('withholds a call when the output tokens reach maxOutputTokens', async () => {
    const parts = [...callParts(), finishPart({ unified: 'tool-calls', raw: 'tool_calls' }, 64)];
    const completion = await runStep({ parts }, { maxOutputTokens: 64 });
    expect(proven(completion)).toEqual([]);
    expect(withheld(completion)).toEqual(['call_1']);
    const below = await runStep({ parts }, { maxOutputTokens: 65 });
    expect(proven(below)).toEqual([readA]);
  });

  it('keeps two concurrent requests apart even when both use call_1', async () => {
    const model = scriptedModel([
      { parts: [...callParts(), finishPart({ unified: 'stop', raw: 'stop' })] },
      {
        parts: [
          ...callParts({ deltas: ['{"path":"b.md"}'] }),
          finishPart({ unified: 'length', raw: 'length' }),
        ],
      },
    ]);
    const adapter = aiSdkAdapter(model);
    const [first, second] = [adapter.step(request()), adapter.step(request())];
    const [stopped, cut] = await Promise.all([first.completion, second.completion]);
    expect(model.requests).toHaveLength(2);
    expect(proven(stopped)).toEqual([readA]);
    expect(proven(cut)).toEqual([]);
    expect(withheld(cut)).toEqual(['call_1']);
  });
});
