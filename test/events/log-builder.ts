import type {
  ContentPart,
  Fact,
  FactOf,
  ProposedFact,
  ToolCallRecord,
  ToolOutcome,
  Usage,
} from '../../events/facts.ts';
import type { JsonValue, ProviderOptions } from '../../events/json.ts';
import { hashJson } from '../../events/json.ts';
import { testLimits } from '../helpers/fact-builder.ts';

/**
 * Builds a session's log fact by fact for crafted tests: numbers `seq` from 1, gives ids
 * `<idPrefix>_<seq>` (default `fact_<seq>`), and opens runs `run_1`, `run_2`… Drafts are written out in full by the test.
 */
export function logBuilder(options: { sessionId?: string; idPrefix?: string } = {}) {
  const sessionId = options.sessionId ?? 'session_1';
  const idPrefix = options.idPrefix ?? 'fact';
  const facts: Fact[] = [];
  let runs = 0;
  let runId = 'run_0';
  let turnId = 'turn_0';

  function add(draft: ProposedFact, state?: string): Fact {
    const seq = facts.length + 1;
    const fact = {
      id: draft.id ?? `${idPrefix}_${seq}`,
      seq,
      at: new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString(),
      sessionId,
      turnId,
      runId,
      ...(state === undefined ? {} : { state }),
      ...draft,
    } as Fact;
    facts.push(fact);
    return fact;
  }

  return {
    facts,
    add,
    /** Opens the next run with `run.started`. */
    startRun(text: string): FactOf<'run.started'> {
      runs += 1;
      runId = `run_${runs}`;
      turnId = `turn_${runs}`;
      return add(draft.runStarted(text), 'projecting') as FactOf<'run.started'>;
    },
    get lastSeq(): number {
      return facts.length;
    },
  };
}

const unknownUsage: Usage = {
  inputTokens: undefined,
  outputTokens: undefined,
  reasoningTokens: undefined,
  cachedInputTokens: undefined,
};

/** Drafts of the facts crafted tests need, with plain defaults. */
export const draft = {
  runStarted: (text: string): ProposedFact => ({
    type: 'run.started',
    input: { text },
    runtimeVersion: 'test',
    limits: testLimits,
  }),
  stepStarted: (
    stepId: string,
    options: { provider?: string; attempt?: number; projectedThroughSeq?: number } = {},
  ): ProposedFact => ({
    type: 'step.started',
    stepId,
    attempt: options.attempt ?? 1,
    request: {
      provider: options.provider ?? 'test.provider',
      modelId: 'test-model',
      messageCount: 1,
      tools: ['tool'],
      activeTools: undefined,
      inputHash: 'sha256:0',
    },
    ...(options.projectedThroughSeq === undefined
      ? {}
      : { projectedThroughSeq: options.projectedThroughSeq }),
  }),
  stepCompleted: (
    stepId: string,
    options: { content?: ContentPart[]; calls?: ToolCallRecord[]; usage?: Partial<Usage> } = {},
  ): ProposedFact => ({
    type: 'step.completed',
    stepId,
    finishReason: {
      unified: (options.calls ?? []).length > 0 ? 'tool-calls' : 'stop',
      raw: undefined,
    },
    usage: { ...unknownUsage, ...options.usage },
    content: options.content ?? [],
    toolCalls: options.calls ?? [],
    response: { id: undefined, modelId: undefined },
  }),
  stepFailed: (
    stepId: string,
    kind: 'rate_limit' | 'context_overflow' = 'rate_limit',
  ): ProposedFact => ({
    type: 'step.failed',
    stepId,
    error: { kind, retryable: kind === 'rate_limit', message: kind },
    observedOutput: false,
  }),
  call: (
    callId: string,
    options: { name?: string; input?: JsonValue; providerOptions?: ProviderOptions } = {},
  ): ToolCallRecord => ({
    callId,
    name: options.name ?? 'tool',
    input: options.input ?? {},
    proof: 'raw-bytes',
    ...(options.providerOptions === undefined ? {} : { providerOptions: options.providerOptions }),
  }),
  withheldCall: (callId: string): ToolCallRecord => ({
    callId,
    name: 'tool',
    input: {},
    proof: null,
    withheld: 'the step finished with length',
  }),
  allowed: (callId: string, input: JsonValue = {}): ProposedFact => ({
    type: 'tool.permission.decided',
    callId,
    decision: 'allow',
    inputHash: hashJson(input),
    by: 'policy',
  }),
  asked: (callId: string, input: JsonValue = {}): ProposedFact => ({
    type: 'tool.permission.requested',
    callId,
    name: 'tool',
    input,
    inputHash: hashJson(input),
  }),
  started: (callId: string, input: JsonValue = {}): ProposedFact => ({
    type: 'tool.started',
    callId,
    name: 'tool',
    input,
    inputHash: hashJson(input),
  }),
  settled: (callId: string, text: string, outcome: ToolOutcome = 'success'): ProposedFact => ({
    type: 'tool.settled',
    callId,
    name: 'tool',
    outcome,
    text,
    truncated: false,
  }),
  indeterminate: (callId: string): ProposedFact => ({
    type: 'tool.indeterminate',
    callId,
    name: 'tool',
  }),
  steering: (text: string): ProposedFact => ({
    type: 'steering.received',
    messageId: `m_${text}`,
    text,
  }),
  compacted: (summary: string, throughSeq: number): ProposedFact => ({
    type: 'compaction.completed',
    summary,
    throughSeq,
    tokensBefore: 1000,
    tokensAfter: 100,
  }),
  ended: (
    status: 'completed' | 'failed' | 'aborted' = 'completed',
    reason = 'end_turn',
  ): ProposedFact => ({
    type: 'run.ended',
    status,
    reason,
  }),
};
