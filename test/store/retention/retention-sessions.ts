import type { NewFact } from '../../../events/facts.ts';
import { storeFacts } from '../store-facts.ts';

/** The sessions the retention campaign purges: all ended in January, 2 to 9 facts each. */
export const purgedSessionIds = Array.from({ length: 24 }, (_, index) => `ended_${index}`);

/** Sessions no purge may touch: one with an open run, one that ended after the cut-off. */
export const keptSessionIds = ['kept_open', 'kept_recent'];

/** The cut-off the campaign purges with. */
export const campaignEndedBefore = new Date('2026-02-01T00:00:00.000Z');

/** The facts of a campaign session, the same on every call (so a whole session is known exactly). */
export function campaignFacts(sessionId: string): NewFact[] {
  const facts = storeFacts(sessionId);
  const index = Number(sessionId.split('_')[1] ?? 0);
  const length = sessionId.startsWith('ended_') ? 2 + (index % 8) : 4;
  const run = `${sessionId}_run`;
  const list: NewFact[] = [facts.runStarted(`${sessionId}#1`, run)];
  for (let n = 2; n < length; n += 1) {
    list.push(facts.steering(`${sessionId}#${n}`, run, `fact ${n} ${'x'.repeat((n * 131) % 500)}`));
  }
  if (sessionId === 'kept_open') return list;
  const at = sessionId === 'kept_recent' ? '2026-02-10T00:00:00.000Z' : '2026-01-10T00:00:00.000Z';
  list.push({ ...facts.runEnded(`${sessionId}#${length}`, run), at });
  return list;
}
