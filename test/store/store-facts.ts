import type { NewFact } from '../../events/facts.ts';
import { testLimits as limits } from '../helpers/fact-builder.ts';

/**
 * Builds new (seq-less) facts of one session for store tests, with fixed times and ids the test
 * names, so stored JSON is the same on every run.
 */
export function storeFacts(sessionId: string, turnId = 'turn_1') {
  const envelope = (id: string, runId: string) => ({
    id,
    at: '2026-01-01T00:00:00.000Z',
    sessionId,
    turnId,
    runId,
  });
  return {
    runStarted: (id: string, runId: string, text = 'hello'): NewFact => ({
      ...envelope(id, runId),
      type: 'run.started',
      input: { text },
      runtimeVersion: 'test',
      limits,
    }),
    steering: (id: string, runId: string, text = 'more'): NewFact => ({
      ...envelope(id, runId),
      type: 'steering.received',
      messageId: `message_${id}`,
      text,
    }),
    runEnded: (id: string, runId: string): NewFact => ({
      ...envelope(id, runId),
      type: 'run.ended',
      status: 'completed',
      reason: 'end_turn',
    }),
  };
}
