import type { NewFact } from '../../events/facts.ts';
import { testLimits as limits, newFact } from '../helpers/fact-builder.ts';

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
    runStarted: (id: string, runId: string, text = 'hello'): NewFact =>
      newFact(
        { type: 'run.started', input: { text }, runtimeVersion: 'test', limits },
        envelope(id, runId),
      ),
    steering: (id: string, runId: string, text = 'more'): NewFact =>
      newFact({ type: 'steering.received', messageId: `message_${id}`, text }, envelope(id, runId)),
    runEnded: (id: string, runId: string): NewFact =>
      newFact({ type: 'run.ended', status: 'completed', reason: 'end_turn' }, envelope(id, runId)),
  };
}
