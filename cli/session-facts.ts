import type { Fact } from '../events/facts.ts';
import type { EventStore } from '../store/event-store.ts';
import { CliError } from './cli-error.ts';

/** The session's facts; a session with none is `notFound` (exit 3), listing how to find one. */
export async function sessionFacts(store: EventStore, sessionId: string): Promise<Fact[]> {
  const facts = await store.read(sessionId);
  if (facts.length > 0) return facts;
  throw new CliError({
    message: `turnlog: session ${sessionId} has no facts in this store; turnlog sessions lists the sessions it has`,
    exit: 'notFound',
  });
}
