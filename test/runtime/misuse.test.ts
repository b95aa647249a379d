import { describe, expect, it } from 'vitest';
import { UnsupportedModelError } from '../../adapters/adapter-errors.ts';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import { TurnlogError } from '../../events/turnlog-error.ts';
import { createRuntime } from '../../runtime.ts';
import {
  InvalidArgumentError,
  NoActiveRunError,
  RuntimeClosedError,
} from '../../runtime-errors.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { addTool, isFactOf, testRuntime, until } from './runtime-helpers.ts';

describe('misuse of the runtime throws a named error that says what to do', () => {
  it.each([
    [{ maxSteps: 0 }, 'limits.maxSteps must be a positive integer'],
    [{ maxAttempts: 1.5 }, 'limits.maxAttempts must be a positive integer'],
    [{ stopGraceMs: -1 }, 'limits.stopGraceMs must be a non-negative integer'],
    [{ toolOutputChars: 100 }, 'limits.toolOutputChars must be at least 500'],
    [
      { contextWindowTokens: 0 },
      'limits.contextWindowTokens must be a positive integer or undefined',
    ],
  ])('refuses limits %j', (limits, message) => {
    expect(() =>
      createRuntime({ model: scriptedModel([]), store: memoryStore(), limits }),
    ).toThrowError(message);
    try {
      createRuntime({ model: scriptedModel([]), store: memoryStore(), limits });
    } catch (error) {
      expect(InvalidArgumentError.isInstance(error)).toBe(true);
      expect(TurnlogError.isTurnlogError(error)).toBe(true);
    }
  });

  it('refuses something that is not a model object, and a model of an unsupported version', () => {
    expect(() =>
      createRuntime({ model: 'openai/gpt-4.1' as never, store: memoryStore() }),
    ).toThrowError(
      'createRuntime(): model must be an AI SDK language model object (e.g. openai(\'gpt-4.1-mini\')) or a ModelAdapter; model id strings are not resolved (got "openai/gpt-4.1").',
    );
    expect(() =>
      createRuntime({ model: { specificationVersion: 'v1' } as never, store: memoryStore() }),
    ).toThrowError(UnsupportedModelError);
  });

  const model = scriptedModel([]);
  const store = memoryStore();
  it.each([
    [
      'a timer past what setTimeout can hold',
      { limits: { stopGraceMs: 3e9 } },
      'limits.stopGraceMs',
      'createRuntime(): limits.stopGraceMs must be at most 2147483647 ms (about 24.8 days), the longest wait a timer can hold (got 3000000000).',
    ],
    [
      'a lease past an hour (its renewal timer would overflow and fire every ms)',
      { worker: { leaseMs: 1e10 } },
      'worker.leaseMs',
      "createRuntime(): worker.leaseMs must be at most 3600000 ms (1 hour): a dead worker's runs wait about leaseMs before another worker takes them over (got 10000000000).",
    ],
    [
      'a lease shorter than 100 ms',
      { worker: { leaseMs: 50 } },
      'worker.leaseMs',
      'createRuntime(): worker.leaseMs must be at least 100 ms (renewals run every leaseMs / 3) (got 50).',
    ],
    [
      'a renewal that is neither thread nor loop',
      { worker: { renewal: 'timer' } },
      'worker.renewal',
      "createRuntime(): worker.renewal must be 'thread' (a worker thread renews the leases) or 'loop' (a timer on the event loop) (got \"timer\").",
    ],
    [
      'a worker id with a NUL',
      { worker: { id: 'w\u00001' } },
      'worker.id',
      'createRuntime(): worker.id cannot be an id: it holds a NUL character (at index 1) (got "w\\u00001").',
    ],
    [
      'a stream idle limit past it',
      { limits: { streamIdleMs: 3e9 } },
      'limits.streamIdleMs',
      'createRuntime(): limits.streamIdleMs must be at most 2147483647 ms (about 24.8 days), the longest wait a timer can hold (got 3000000000).',
    ],
    [
      'a misspelled limit',
      { limits: { maxStep: 3 } },
      'limits.maxStep',
      'createRuntime(): unknown option limits.maxStep; the options are maxSteps, maxAttempts, maxOutputTokens, toolOutputChars, contextWindowTokens, toolConcurrency, stopGraceMs, streamIdleMs, maxRetryAfterMs, maxRunInputTokens, maxRunOutputTokens. A misspelled option would otherwise be ignored.',
    ],
    [
      'a limit with a default set to undefined',
      { limits: { maxSteps: undefined } },
      'limits.maxSteps',
      'createRuntime(): limits.maxSteps must be a positive integer (got undefined).',
    ],
    [
      'a store that is not an EventStore',
      { store: { append: async () => ({}) } },
      'store',
      'createRuntime(): store must be an EventStore (lowdbStore(), memoryStore() or your own); it has no read, subscribe, openRuns, findings, sessions, savePartial, loadPartial, clearPartial, close methods (got {}).',
    ],
    [
      'a policy that is not a function',
      { policy: 'deny' },
      'policy',
      'createRuntime(): policy must be a function ({ name, input, toolVerdict, sessionId }) → verdict (got "deny").',
    ],
    [
      'tools that are not a record',
      { tools: [] },
      'tools',
      'createRuntime(): tools must be a record of tools by name, { weather: defineTool(…) }, or a function returning one (got []).',
    ],
    [
      'an unknown option',
      { Tools: {} },
      'Tools',
      'createRuntime(): unknown option Tools (did you mean tools?); the options are model, tools, store, system, limits, settings, policy, inspect, now, generateId, random, worker, telemetry. A misspelled option would otherwise be ignored.',
    ],
    [
      'a system prompt that is not text',
      { system: 42 },
      'system',
      'createRuntime(): system must be a string when given (got 42).',
    ],
    [
      'a clock that is not a function',
      { now: 5 },
      'now',
      'createRuntime(): now must be a function returning ms since the epoch (got 5).',
    ],
  ])('refuses %s, naming the option', (_name, options, argument, message) => {
    const error = (() => {
      try {
        createRuntime({ model, store, ...options } as never);
      } catch (caught) {
        return caught;
      }
    })();
    expect(InvalidArgumentError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ argument, message });
  });

  it.each([
    [
      'decide with a misspelled inputHash',
      { callId: 'call_1', decision: 'allow', input_hash: 'sha256:0' },
      'input_hash',
      'runtime.decide(): unknown option input_hash (did you mean inputHash?); the options are sessionId, callId, decision, reason, inputHash. A misspelled option would otherwise be ignored.',
    ],
    [
      'decide with a reason that is not text',
      { callId: 'call_1', decision: 'deny', reason: 42 },
      'reason',
      'runtime.decide(): reason must be a string when given (got 42).',
    ],
    [
      'decide with something that is not a decision',
      { callId: 'call_1', decision: 'maybe' },
      'decision',
      "runtime.decide(): decision must be one of 'allow', 'deny', 'report-unknown', 'abort' (got \"maybe\").",
    ],
    [
      'decide with an empty inputHash',
      { callId: 'call_1', decision: 'allow', inputHash: '' },
      'inputHash',
      'runtime.decide(): inputHash must be a non-empty string (got "").',
    ],
  ])(
    'refuses %s and records nothing (a parked run stays parked)',
    async (_name, input, argument, message) => {
      const { tool, executions } = addTool('ask');
      const runtime = testRuntime(memoryStore(), {
        model: scriptedModel([{ toolCalls: [{ name: 'add', input: { a: 1, b: 2 } }] }]),
        tools: { add: tool },
      });
      const turn = await runtime.send({ sessionId: 's1', text: 'add' });
      await until(turn, isFactOf('tool.permission.requested'));
      const before = await runtime.facts('s1');
      const error = await runtime
        .decide({ sessionId: 's1', ...input } as never)
        .catch((caught: unknown) => caught);
      expect(InvalidArgumentError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ argument, message });
      expect(await runtime.facts('s1')).toEqual(before);
      expect(await runtime.pending('s1')).toHaveLength(1);
      expect(executions).toEqual([]);
      await runtime.close();
    },
  );

  it.each([
    [
      'send',
      { sessionId: 's1', text: 'hi', extra: 1 },
      'extra',
      'runtime.send(): unknown option extra; the options are sessionId, text, files, regenerates, settings. A misspelled option would otherwise be ignored.',
    ],
    [
      'steer',
      { sessionId: 's1', text: 42 },
      'text',
      'runtime.steer(): text must be a non-empty string (got 42).',
    ],
    [
      'stop',
      { sessionId: 's1', reason: 42 },
      'reason',
      'runtime.stop(): reason must be a string when given (got 42).',
    ],
    ['stop', 's1', 'input', 'runtime.stop() takes one object { sessionId, reason }, got "s1".'],
    [
      'pending',
      42,
      'sessionId',
      'runtime.pending(): sessionId must be a non-empty string (got 42).',
    ],
    [
      'history',
      '',
      'sessionId',
      'runtime.history(): sessionId must be a non-empty string (got "").',
    ],
    [
      'facts',
      undefined,
      'sessionId',
      'runtime.facts(): sessionId must be a non-empty string (got undefined).',
    ],
  ] as const)('refuses a bad argument of %s(): %j', async (method, argument, name, message) => {
    const runtime = testRuntime(memoryStore(), { model: scriptedModel([]) });
    const call = runtime[method] as (input: unknown) => Promise<unknown>;
    const error = await call(argument).catch((caught: unknown) => caught);
    expect(InvalidArgumentError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ argument: name, message });
    expect(await runtime.facts('s1')).toEqual([]);
    await runtime.close();
  });

  it('refuses an empty message or session id', async () => {
    const runtime = testRuntime(memoryStore(), { model: scriptedModel([]) });
    await expect(runtime.send({ sessionId: 's1', text: '  ' })).rejects.toThrowError(
      'text must be a non-empty string',
    );
    await expect(runtime.send({ sessionId: '', text: 'hi' })).rejects.toSatisfy(
      InvalidArgumentError.isInstance,
    );
  });

  it('refuses session and call ids that are not well-formed UTF-16 or hold a NUL, naming them', async () => {
    const store = memoryStore();
    const runtime = testRuntime(store, { model: scriptedModel([]) });
    for (const sessionId of ['x\ud800', 'x\udbff', 'x\u0000']) {
      const calls = [
        () => runtime.send({ sessionId, text: 'hi' }),
        () => runtime.steer({ sessionId, text: 'hi' }),
        () => runtime.stop({ sessionId }),
        () => runtime.facts(sessionId),
        () => runtime.follow(sessionId),
      ];
      for (const call of calls) {
        const error = await call().catch((caught: unknown) => caught);
        expect(InvalidArgumentError.isInstance(error)).toBe(true);
        expect(error).toMatchObject({ argument: 'sessionId' });
        expect((error as Error).message).toMatch(
          /sessionId cannot be an id: it (holds a NUL|is not well-formed UTF-16)/,
        );
      }
    }
    const decided = await runtime
      .decide({ sessionId: 's1', callId: 'call_\udfff', decision: 'allow' })
      .catch((caught: unknown) => caught);
    expect(decided).toMatchObject({ name: 'InvalidArgumentError', argument: 'callId' });
    expect(await store.sessions()).toEqual([]);
  });

  it('refuses decide, steer and stop when the session has no unfinished run', async () => {
    const runtime = testRuntime(memoryStore(), { model: scriptedModel([{ text: 'done' }]) });
    await (await runtime.send({ sessionId: 's1', text: 'hi' })).done;
    for (const call of [
      () => runtime.decide({ sessionId: 's1', callId: 'call_1', decision: 'allow' }),
      () => runtime.steer({ sessionId: 's1', text: 'more' }),
      () => runtime.stop({ sessionId: 's1' }),
    ]) {
      await expect(call()).rejects.toThrowError(
        'session s1 has no unfinished run; start one with runtime.send()',
      );
      await expect(call()).rejects.toSatisfy(NoActiveRunError.isInstance);
    }
  });

  it('refuses every operation after close()', async () => {
    const runtime = testRuntime(memoryStore(), { model: scriptedModel([]) });
    await runtime.close();
    await expect(runtime.send({ sessionId: 's1', text: 'hi' })).rejects.toSatisfy(
      RuntimeClosedError.isInstance,
    );
    await expect(runtime.stop({ sessionId: 's1' })).rejects.toSatisfy(
      RuntimeClosedError.isInstance,
    );
    await runtime.close(); // a second close is a no-op
  });
});
