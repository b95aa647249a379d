import type { NewFact } from '../../../events/facts.ts';
import { storeFacts } from '../store-facts.ts';

/**
 * The `n`-th fact the crash child appends to a session (a run.started, then steering facts of
 * varied size), so the parent knows exactly what every prefix of the session must hold.
 */
export function crashFact(sessionId: string, n: number): NewFact {
  const facts = storeFacts(sessionId);
  const id = `${sessionId}#${n}`;
  if (n === 1) return facts.runStarted(id, 'run_1');
  return facts.steering(id, 'run_1', `fact ${n} ${'x'.repeat((n * 97) % 700)}`);
}

/** How many facts the crash child puts in its `k`-th append (mostly one, sometimes three). */
export function crashBatchSize(k: number): number {
  return k % 5 === 4 ? 3 : 1;
}
