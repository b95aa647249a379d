import type { Usage } from '../../events/facts.ts';
import type { StepView, ToolCallView } from '../../events/project-turn.ts';

/** Expected `Usage`, in field order input, output, reasoning, cached. */
export function usage(
  inputTokens: number | undefined,
  outputTokens: number | undefined,
  reasoningTokens: number | undefined,
  cachedInputTokens: number | undefined,
): Usage {
  return { inputTokens, outputTokens, reasoningTokens, cachedInputTokens };
}

/** An expected completed one-attempt step; the test states everything that differs. */
export function completedStep(
  fields: Pick<StepView, 'stepId' | 'provider' | 'modelId' | 'finishReason' | 'usage'> &
    Partial<StepView>,
): StepView {
  return {
    attempts: 1,
    status: 'completed',
    text: '',
    reasoning: '',
    toolCalls: [],
    providerTools: [],
    error: undefined,
    ...fields,
  };
}

/** An expected call view of a proven call; the test states everything that differs. */
export function callView(
  fields: Pick<ToolCallView, 'callId' | 'name' | 'input'> & Partial<ToolCallView>,
): ToolCallView {
  return {
    proof: 'raw-bytes',
    withheld: undefined,
    permission: undefined,
    started: false,
    indeterminate: false,
    reconciled: undefined,
    outcome: undefined,
    result: undefined,
    ...fields,
  };
}

export const allowedByPolicy = { decision: 'allow', by: 'policy', reason: undefined } as const;
