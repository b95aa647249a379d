import { hashText } from '../events/json.ts';

/** The ids that name one tool call for good: its session, run, step and the model's call id. */
export interface CallIdentity {
  sessionId: string;
  runId: string;
  stepId: string;
  callId: string;
}

/**
 * The idempotency key of one tool call: `turnlog-` and 32 hex digits (128 bits) of the SHA-256 of
 * the session, run, step and call ids (`JSON.stringify([sessionId, runId, stepId, callId])`).
 * It is the same for the call across retries, recoveries, takeovers and a run again after
 * `reconcile` said `not-done` (those ids are in the log), and differs between any two calls of
 * any two sessions: the step id is part of it because providers reuse call ids (`call_1`) from
 * step to step. 40 characters of `[a-z0-9-]`, which payment and messaging APIs accept as a key.
 *
 * @example
 * idempotencyKey({ sessionId: 's-1', runId: 'r-1', stepId: 'st-1', callId: 'call_1' });
 * // 'turnlog-…' (40 characters), the same on every process that reads the log
 */
export function idempotencyKey({ sessionId, runId, stepId, callId }: CallIdentity): string {
  const hash = hashText(JSON.stringify([sessionId, runId, stepId, callId]));
  return `turnlog-${hash.slice('sha256:'.length)}`;
}
