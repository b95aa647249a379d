// The turnlog and plain-streamText sides of the orchestration benchmarks, over the shared
// conversation model and the same `add` tool.
import { type ModelMessage, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import { createRuntime, type Runtime, type RuntimeOptions } from '../runtime.ts';
import type { EventStore } from '../store/event-store.ts';
import { defineTool } from '../tools/define-tool.ts';
import { addTool, conversationModel, conversationPrompt } from './conversation.ts';

const addInput = z.object({ a: z.number(), b: z.number() });

/** A turnlog runtime for the conversation of `steps` steps on `store`. */
export function conversationRuntime(options: {
  store: EventStore;
  steps: number;
  /** The `add` tool's permission (default `allow`); a function is asked for every call. */
  permission?: 'allow' | 'ask' | ((input: { a: number; b: number }) => 'allow' | 'ask');
  /** Traces and metrics (default: the runtime's default, the global providers). */
  telemetry?: RuntimeOptions['telemetry'];
}): Runtime {
  return createRuntime({
    model: conversationModel(options.steps),
    tools: {
      add: defineTool({
        description: addTool.description,
        inputSchema: addInput,
        permission: options.permission ?? 'allow',
        execute: (input) => addTool.execute(input),
      }),
    },
    store: options.store,
    limits: { maxSteps: options.steps },
    ...(options.telemetry === undefined ? {} : { telemetry: options.telemetry }),
  });
}

/** Runs the conversation as one turn of a new session, reading every event, and checks it. */
export async function runTurnlog(options: {
  runtime: Runtime;
  sessionId: string;
  steps: number;
}): Promise<void> {
  const turn = await options.runtime.send({
    sessionId: options.sessionId,
    text: conversationPrompt,
  });
  for await (const _event of turn.events);
  const outcome = await turn.done;
  if (outcome.status !== 'completed' || outcome.steps !== options.steps) {
    throw new Error(
      `turnlog run ${options.sessionId}: ${outcome.status} (${outcome.reason}) after ${outcome.steps} steps, expected completed after ${options.steps}`,
    );
  }
}

/**
 * Runs the conversation with plain `streamText`: the SDK's own loop (`stopWhen:
 * stepCountIs(steps)`) executing the tool, the full stream read; checks the step count.
 * `history` (AI SDK messages) goes before the user message, as an app keeping its own history
 * would send it.
 */
export async function runStreamText(
  steps: number,
  history: readonly ModelMessage[] = [],
): Promise<void> {
  const result = streamText({
    model: conversationModel(steps),
    tools: {
      add: tool({
        description: addTool.description,
        inputSchema: addInput,
        execute: async (input) => addTool.execute(input),
      }),
    },
    stopWhen: stepCountIs(steps),
    messages: [...history, { role: 'user', content: conversationPrompt }],
    maxRetries: 0,
  });
  for await (const _part of result.fullStream);
  const done = await result.steps;
  if (done.length !== steps) {
    throw new Error(`streamText: ${done.length} steps, expected ${steps}`);
  }
}
