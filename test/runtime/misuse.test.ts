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
import { memoryStore } from '../../store/memory-store.ts';
import { testRuntime } from './runtime-helpers.ts';

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

  it('refuses something that is not a model', () => {
    expect(() =>
      createRuntime({ model: 'openai/gpt-4.1' as never, store: memoryStore() }),
    ).toThrowError(UnsupportedModelError);
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
