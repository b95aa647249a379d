import type { Fact, NewFact, ProposedFact, RunLimits } from '../../events/facts.ts';

export const testLimits: RunLimits = {
  maxSteps: 10,
  maxAttempts: 3,
  maxOutputTokens: undefined,
  toolOutputChars: 10_000,
  contextWindowTokens: undefined,
  toolConcurrency: 4,
  stopGraceMs: 1_000,
};

/** Where a test fact belongs, and what names it (defaults: session_1, turn_1, run_1). */
export interface TestEnvelope {
  sessionId?: string;
  turnId?: string;
  runId?: string;
  /** Default: the draft's own `id`, else `fact_<seq>`. */
  id?: string;
  /** Default: a fixed time derived from `seq` (0 for a new fact), the same on every run. */
  at?: string;
  /** The machine state the fact records, when the test gives one. */
  state?: string;
}

/**
 * The one way tests build a fact: `draft` in its envelope, with fixed ids and times so stored
 * JSON is the same on every run. `newFact` is what a store's `append` takes; `storedFact` has
 * its `seq`.
 */
export function newFact(draft: ProposedFact, envelope: TestEnvelope = {}): NewFact {
  const { seq: _seq, ...fact } = storedFact(draft, { ...envelope, seq: 0 });
  return fact as NewFact;
}

/** A stored fact: `newFact` with its `seq` (which also names its default id and time). */
export function storedFact(draft: ProposedFact, envelope: TestEnvelope & { seq: number }): Fact {
  const { seq } = envelope;
  return {
    id: envelope.id ?? draft.id ?? `fact_${seq}`,
    seq,
    at: envelope.at ?? new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString(),
    sessionId: envelope.sessionId ?? 'session_1',
    turnId: envelope.turnId ?? 'turn_1',
    runId: envelope.runId ?? 'run_1',
    ...(envelope.state === undefined ? {} : { state: envelope.state }),
    ...draft,
  } as Fact;
}

/**
 * Builds complete stored facts for one run, numbering `seq` and ids in order, so tests can
 * send them to the machine one by one.
 */
export function factBuilder(
  options: { sessionId?: string; runId?: string; turnId?: string; firstSeq?: number } = {},
) {
  let seq = (options.firstSeq ?? 1) - 1;
  return (draft: ProposedFact): Fact => {
    seq += 1;
    return storedFact(draft, { ...options, seq });
  };
}

/** `run.started` with the test limits (override any). */
export function runStartedDraft(text = 'hello', limits: Partial<RunLimits> = {}): ProposedFact {
  return {
    type: 'run.started',
    input: { text },
    runtimeVersion: 'test',
    limits: { ...testLimits, ...limits },
  };
}

/** `step.started` for a step of the test model (a fixed request capture). */
export function stepStartedDraft(stepId = 'step_1', attempt = 1): ProposedFact {
  return {
    type: 'step.started',
    stepId,
    attempt,
    request: {
      provider: 'test',
      modelId: 'm',
      messageCount: 1,
      tools: [],
      activeTools: undefined,
      inputHash: 'h',
    },
  };
}
