import { vi } from 'vitest';
import { z } from 'zod';
import type { RunLimits } from '../../events/facts.ts';
import { assertNever, type Fact } from '../../events/facts.ts';
import type { JsonValue } from '../../events/json.ts';
import type { TurnEvent, TurnHandle, TurnResult } from '../../machines/effects/turn-channel.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { createFakeFetch, type FakeFetch, type FakeResponse } from '../helpers/fake-fetch.ts';
import { testRuntime } from '../runtime/runtime-helpers.ts';
import type { ProviderProfile, ToolName } from './provider-profiles.ts';

/**
 * Runs fault scenarios through `createRuntime`: a runtime on `memoryStore`, a provider profile's
 * real model on a scripted `fetch`, and tools that count their executions; then watches the turn
 * and reduces its facts to the lines the tests assert.
 */

/** The fixtures' tools; each records every execution. */
export function countedTools() {
  const executions: { name: ToolName; input: JsonValue }[] = [];
  const record = (name: ToolName) => (input: JsonValue) => {
    executions.push({ name, input });
    return `${name} ran`;
  };
  const location = z.object({ location: z.string() });
  const tools = {
    calculator: defineTool({
      description: 'Calculates a op b.',
      inputSchema: z.object({ a: z.number(), b: z.number(), op: z.string() }),
      execute: record('calculator'),
    }),
    weather: defineTool({
      description: 'The weather in a city.',
      inputSchema: location,
      execute: record('weather'),
    }),
    getWeather: defineTool({
      description: 'The weather in a city.',
      inputSchema: location,
      execute: record('getWeather'),
    }),
  };
  return { tools, executions };
}

/** A runtime on `memoryStore` whose model is `profile`'s provider answering `responses` in order. */
export function faultRuntime(
  profile: ProviderProfile,
  responses: readonly FakeResponse[],
  limits: Partial<RunLimits> = {},
) {
  const fake: FakeFetch = createFakeFetch(responses);
  const { tools, executions } = countedTools();
  const runtime = testRuntime(memoryStore(), { model: profile.model(fake.fetch), tools, limits });
  return { runtime, fake, executions };
}

/**
 * Every string in a request body, including the strings inside strings that hold JSON (providers
 * wrap some tool results as JSON text), so a test can find what the model was told.
 */
export function bodyStrings(value: unknown): string[] {
  if (typeof value === 'string') {
    try {
      return [value, ...bodyStrings(JSON.parse(value))];
    } catch {
      return [value];
    }
  }
  if (typeof value !== 'object' || value === null) return [];
  return Object.values(value).flatMap(bodyStrings);
}

/** Collects a turn's events as they arrive, so a test can wait for one while timers are fake. */
export function watch(turn: TurnHandle) {
  const events: TurnEvent[] = [];
  const listeners = new Set<() => void>();
  let ended = false;
  const notify = () => {
    for (const listener of listeners) listener();
  };
  (async () => {
    for await (const event of turn.events) {
      events.push(event);
      notify();
    }
  })()
    // A run whose events fail (the log could not be written) makes `next` reject, not hang.
    .catch(() => {})
    .finally(() => {
      ended = true;
      notify();
    });
  const find = (type: TurnEvent['type'], count: number) =>
    events.filter((event) => event.type === type)[count - 1];
  return {
    events,
    /** Facts seen so far, in order. */
    facts: () => events.filter((event): event is Fact => 'seq' in event),
    /** Resolves with the `count`-th event of `type` (no timer needed to reach it). */
    next(type: TurnEvent['type'], count = 1): Promise<TurnEvent> {
      return new Promise((resolve, reject) => {
        const check = () => {
          const event = find(type, count);
          if (event !== undefined) {
            listeners.delete(check);
            resolve(event);
          } else if (ended) {
            listeners.delete(check);
            reject(new Error(`the run ended without ${type} #${count}`));
          }
        };
        listeners.add(check);
        check();
      });
    },
    has: (type: TurnEvent['type'], count = 1) => find(type, count) !== undefined,
  };
}

/**
 * Advances fake timers in `stepMs` steps until the turn is done (the AI SDK, streams and the
 * store settle in microtasks between steps). Fails instead of spinning past `maxMs`.
 */
export async function finishWithFakeTimers(
  turn: TurnHandle,
  { stepMs = 50, maxMs = 120_000 } = {},
): Promise<TurnResult> {
  let result: TurnResult | undefined;
  let failure: unknown;
  turn.done.then(
    (value) => {
      result = value;
    },
    (error: unknown) => {
      failure = error;
    },
  );
  for (let elapsed = 0; result === undefined; elapsed += stepMs) {
    if (failure !== undefined) throw failure;
    if (elapsed > maxMs) throw new Error(`the turn did not end within ${maxMs} ms of fake time`);
    await vi.advanceTimersByTimeAsync(stepMs);
  }
  return result;
}

/**
 * The run's facts as one line each, with what the fault tests assert: attempts, failure kinds,
 * retries, calls and their proofs, tool settlements (by tool name), the end. Exact, so any extra
 * or missing fact fails the test.
 */
export function trace(facts: readonly Fact[]): string[] {
  const names = new Map<string, string>();
  return facts.map((fact) => {
    switch (fact.type) {
      case 'step.started':
        return `step.started ${fact.stepId} attempt ${fact.attempt}`;
      case 'step.failed': {
        const { kind, retryable, status, retryAfterMs } = fact.error;
        return [
          `step.failed ${fact.stepId} ${kind}`,
          retryable ? 'retryable' : 'final',
          fact.observedOutput ? 'after output' : 'before output',
          ...(status === undefined ? [] : [`status ${status}`]),
          ...(retryAfterMs === undefined ? [] : [`retry after ${retryAfterMs} ms`]),
        ].join(', ');
      }
      case 'retry.due':
        return `retry.due ${fact.stepId} attempt ${fact.attempt}`;
      case 'step.completed': {
        for (const call of fact.toolCalls) names.set(call.callId, call.name);
        const calls = fact.toolCalls.map((call) => `${call.name}:${call.proof ?? 'withheld'}`);
        const listed = calls.length > 0 ? ` [${calls.join(' ')}]` : '';
        return `step.completed ${fact.stepId} ${fact.finishReason.unified}${listed}`;
      }
      case 'tool.permission.decided':
        return `tool.permission.decided ${names.get(fact.callId)} ${fact.decision} by ${fact.by}`;
      case 'tool.permission.requested':
      case 'tool.started':
      case 'tool.indeterminate':
        return `${fact.type} ${fact.name}`;
      case 'tool.settled':
        return `tool.settled ${fact.name} ${fact.outcome}`;
      case 'tool.reconciled':
        return `tool.reconciled ${fact.name} ${fact.answer}`;
      case 'run.ended':
        return `run.ended ${fact.status} ${fact.reason}`;
      case 'run.started':
      case 'steering.received':
      case 'compaction.started':
      case 'compaction.completed':
      case 'compaction.failed':
      case 'run.stop.requested':
      case 'run.recovered':
        return fact.type;
      default:
        return assertNever(fact, 'fact');
    }
  });
}
