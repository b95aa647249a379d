import { z } from 'zod';
import type { Fact } from '../../events/facts.ts';
import { sequentialIds } from '../../events/ids.ts';
import type { TurnEvent, TurnHandle } from '../../machines/effects/turn-channel.ts';
import { createRuntime, type RuntimeOptions } from '../../runtime.ts';
import type { EventStore } from '../../store/event-store.ts';
import { defineTool } from '../../tools/define-tool.ts';

/** Resolves with the first event of the turn that matches (iterating the handle's events). */
export async function until(
  turn: TurnHandle,
  match: (event: TurnEvent) => boolean,
): Promise<TurnEvent> {
  for await (const event of turn.events) if (match(event)) return event;
  throw new Error('the run ended before the expected event');
}

export const isFactOf = (type: Fact['type']) => (event: TurnEvent) => event.type === type;

/** A runtime with deterministic ids and clock, on the given store. */
export function testRuntime(store: EventStore, options: Omit<RuntimeOptions, 'store'>) {
  let clock = Date.UTC(2026, 10, 1);
  return createRuntime({
    store,
    generateId: sequentialIds(),
    now: () => (clock += 1),
    random: () => 0.5,
    ...options,
  });
}

/** A deferred promise. */
export function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((onResolve) => {
    resolve = onResolve;
  });
  return { promise, resolve };
}

/** An `add` tool that records every execution. */
export function addTool(permission: 'allow' | 'ask' = 'allow') {
  const executions: { a: number; b: number }[] = [];
  const tool = defineTool({
    description: 'Adds two numbers.',
    inputSchema: z.object({ a: z.number(), b: z.number() }),
    permission,
    execute: (input) => {
      executions.push(input);
      return input.a + input.b;
    },
  });
  return { tool, executions };
}

/** Facts of one run, in order. */
export const runFacts = (facts: Fact[], runId: string) =>
  facts.filter((fact) => fact.runId === runId);
