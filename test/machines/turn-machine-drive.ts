/** Inert-actor drivers and fact drafts shared by the turn machine's tests. */
import { createActor, fromCallback } from 'xstate';
import type { Fact, FactOf, ProposedFact, RunLimits, ToolCallRecord } from '../../events/facts.ts';
import { statePath } from '../../machines/pure/state-path.ts';
import { inputFromRunStarted } from '../../machines/pure/turn-context.ts';
import { factBuilder, runStartedDraft, stepStartedDraft } from '../helpers/fact-builder.ts';
import { providedMachine } from '../helpers/provided-machine.ts';
/** Drives the machine with inert actors that only record how they were started. */
export function drive(limits: Partial<RunLimits> = {}) {
  const started: { src: string; input: unknown }[] = [];
  const record = (src: string) =>
    fromCallback(({ input }: { input: unknown }) => {
      started.push({ src, input });
    });
  const machine = providedMachine(record);
  const fact = factBuilder();
  const runStarted = fact(runStartedDraft('hello', limits)) as FactOf<'run.started'>;
  const actor = createActor(machine, { input: inputFromRunStarted(runStarted) }).start();
  const send = (draft: ProposedFact) => {
    const next = fact(draft);
    actor.send(next);
    return statePath(actor.getSnapshot().value);
  };
  const can = (draft: ProposedFact) => actor.getSnapshot().can({ ...fact(draft) } as Fact);
  return { actor, send, can, started, state: () => statePath(actor.getSnapshot().value) };
}

export const call = (
  callId: string,
  name = 'echo',
  input: ToolCallRecord['input'] = {},
): ToolCallRecord => ({
  callId,
  name,
  input,
  proof: 'raw-bytes',
});

export const stepStarted = stepStartedDraft;

export const stepCompleted = (
  toolCalls: ToolCallRecord[] = [],
  stepId = 'step_1',
): ProposedFact => ({
  type: 'step.completed',
  stepId,
  finishReason: { unified: toolCalls.length > 0 ? 'tool-calls' : 'stop', raw: undefined },
  usage: {
    inputTokens: 1,
    outputTokens: 1,
    reasoningTokens: undefined,
    cachedInputTokens: undefined,
  },
  content: [{ type: 'text', text: 'hi' }],
  toolCalls,
  response: { id: 'r', modelId: 'm' },
});

export const allow = (callId: string, by: 'policy' | 'user' = 'policy'): ProposedFact => ({
  type: 'tool.permission.decided',
  callId,
  decision: 'allow',
  inputHash: `hash-${callId}`,
  by,
});

export const settled = (
  callId: string,
  outcome: 'success' | 'error' = 'success',
): ProposedFact => ({
  type: 'tool.settled',
  callId,
  name: 'echo',
  outcome,
  text: outcome,
  truncated: false,
});

export const started = (callId: string): ProposedFact => ({
  type: 'tool.started',
  callId,
  name: 'echo',
  input: {},
  inputHash: `hash-${callId}`,
});

export const failed = (
  kind: 'rate_limit' | 'context_overflow' | 'auth',
  options: { observedOutput?: boolean; retryAfterMs?: number } = {},
): ProposedFact => ({
  type: 'step.failed',
  stepId: 'step_1',
  error: {
    kind,
    retryable: kind === 'rate_limit',
    message: kind,
    ...(options.retryAfterMs === undefined ? {} : { retryAfterMs: options.retryAfterMs }),
  },
  observedOutput: options.observedOutput ?? false,
});
