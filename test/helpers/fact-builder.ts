import type { Fact, ProposedFact, RunLimits } from '../../events/facts.ts';

export const testLimits: RunLimits = {
  maxSteps: 10,
  maxAttempts: 3,
  maxOutputTokens: undefined,
  toolOutputChars: 10_000,
  contextWindowTokens: undefined,
  toolConcurrency: 4,
  stopGraceMs: 1_000,
};

/**
 * Builds complete stored facts for one run, numbering `seq` and ids in order, so tests can
 * send them to the machine one by one.
 */
export function factBuilder(
  options: { sessionId?: string; runId?: string; turnId?: string; firstSeq?: number } = {},
) {
  const sessionId = options.sessionId ?? 'session_1';
  const runId = options.runId ?? 'run_1';
  const turnId = options.turnId ?? 'turn_1';
  let seq = (options.firstSeq ?? 1) - 1;
  return (draft: ProposedFact): Fact => {
    seq += 1;
    return {
      id: draft.id ?? `fact_${seq}`,
      seq,
      at: new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString(),
      sessionId,
      turnId,
      runId,
      ...draft,
    } as Fact;
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
