// The facts the store benchmark appends: realistic runs (a tool step, its settlement, a text
// step) with fixed ids and times.
import type { NewFact, RunLimits } from '../events/facts.ts';
import type { EventStore } from '../store/event-store.ts';

/** The limits recorded in every benchmark `run.started`. */
export const limits: RunLimits = {
  maxSteps: 20,
  maxAttempts: 3,
  maxOutputTokens: 8192,
  toolOutputChars: 20_000,
  contextWindowTokens: 200_000,
  toolConcurrency: 4,
  stopGraceMs: 2_000,
};

/** The facts of one realistic run: a tool step, its settlement, a text step (8 facts). */
function runFacts(sessionId: string, run: number): NewFact[] {
  const runId = `run_${run}`;
  const stepId = `step_${run}_1`;
  const callId = `call_${run}`;
  const envelope = (index: number) => ({
    id: `${sessionId}_${run}_${index}`,
    at: '2026-03-02T10:02:11.480Z',
    sessionId,
    turnId: `turn_${run}`,
    runId,
  });
  const request = (messageCount: number) => ({
    provider: 'openai.responses',
    modelId: 'gpt-5-mini',
    messageCount,
    tools: ['readFile', 'writeFile', 'listFiles', 'runCommand'],
    activeTools: undefined,
    inputHash: 'sha256:6d7d03e80e83b80c61daa9d07fcf35ac',
  });
  const usage = { inputTokens: 1204, outputTokens: 96, reasoningTokens: 48, cachedInputTokens: 0 };
  const text = `Run ${run}: I read the file and here is what it says. ${'Lorem ipsum dolor sit amet. '.repeat(8)}`;
  return [
    {
      ...envelope(1),
      type: 'run.started',
      input: { text: `Question ${run}?` },
      runtimeVersion: '0.1.0',
      limits,
    },
    { ...envelope(2), type: 'step.started', stepId, attempt: 1, request: request(run * 4) },
    {
      ...envelope(3),
      type: 'step.completed',
      stepId,
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage,
      content: [
        {
          type: 'reasoning',
          text: 'Read the file first.',
          providerOptions: { openai: { itemId: `rs_${run}` } },
        },
        { type: 'text', text: 'Reading it.' },
      ],
      toolCalls: [
        { callId, name: 'readFile', input: { path: 'docs/install.md' }, proof: 'raw-bytes' },
      ],
      response: { id: `resp_${run}`, modelId: 'gpt-5-mini' },
    },
    {
      ...envelope(4),
      type: 'tool.started',
      callId,
      name: 'readFile',
      input: { path: 'docs/install.md' },
      inputHash: 'sha256:033db264',
    },
    {
      ...envelope(5),
      type: 'tool.settled',
      callId,
      name: 'readFile',
      outcome: 'success',
      text: `# Install\n${'Run npm install, then npm test. '.repeat(10)}`,
      truncated: false,
      durationMs: 3,
    },
    {
      ...envelope(6),
      type: 'step.started',
      stepId: `step_${run}_2`,
      attempt: 1,
      request: request(run * 4 + 2),
    },
    {
      ...envelope(7),
      type: 'step.completed',
      stepId: `step_${run}_2`,
      finishReason: { unified: 'stop', raw: 'stop' },
      usage,
      content: [{ type: 'text', text }],
      toolCalls: [],
      response: { id: `resp_${run}_2`, modelId: 'gpt-5-mini' },
    },
    { ...envelope(8), type: 'run.ended', status: 'completed', reason: 'end_turn' },
  ];
}

/** Appends whole runs (one append each) until the session holds `length` facts. */
export async function fill(store: EventStore, sessionId: string, length: number): Promise<void> {
  let lastSeq = (await store.read(sessionId)).length;
  for (let run = lastSeq / 8 + 1; lastSeq < length; run += 1) {
    const facts = runFacts(sessionId, run).slice(0, length - lastSeq);
    lastSeq = (await store.append(sessionId, facts, { expectedSeq: lastSeq })).lastSeq;
  }
}
