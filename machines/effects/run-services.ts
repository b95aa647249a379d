import { type EventObject, fromCallback } from 'xstate';
import type { ModelAdapter } from '../../adapters/model-adapter.ts';
import type {
  Fact,
  ProposedFact,
  RunLimits,
  RunSettings,
  TransientEvent,
} from '../../events/facts.ts';
import type { IdGenerator } from '../../events/ids.ts';
import type { RequestTool } from '../../events/messages.ts';
import type { HistoryProjection } from '../../events/project-history.ts';
import type { EventStore } from '../../store/event-store.ts';
import type { CallSettler } from '../../tools/tool.ts';
import type { PreparedRequest } from '../pure/actor-inputs.ts';

/** What one run's actors need: the adapter, the tools, the log, and the run's commit. */
export interface RunServices {
  adapter: ModelAdapter;
  callSettler: CallSettler;
  toolDefinitions: RequestTool[];
  /** `hashJson(toolDefinitions)`, recorded in each `step.started`. */
  toolsHash: string;
  system: string | undefined;
  limits: RunLimits;
  /** The run's sampling settings and provider options, as its `run.started` recorded them. */
  settings: RunSettings | undefined;
  store: EventStore;
  /** The session's facts, kept current by the run driver. */
  facts: () => readonly Fact[];
  /** The run's history projection: each request reads only the facts since the previous one. */
  history: HistoryProjection;
  /** Commit, then transition; a `step.started` may bring the request it sends (`prepared`). */
  commit: (draft: ProposedFact, prepared?: PreparedRequest) => Promise<boolean>;
  /** Commits facts in one append; the machine sees none of them before all are durable. */
  commitAll: (drafts: readonly ProposedFact[]) => Promise<boolean[]>;
  /** Aborted when a stop is committed (I10). */
  signal: AbortSignal;
  generateId: IdGenerator;
  /** Randomness in [0, 1), for retry jitter. */
  random: () => number;
  /** Streams a transient delta to the run's subscribers. */
  emit: (event: TransientEvent) => void;
  /** An actor failed in a way that is not a fact (the store could not be written). */
  onError: (error: unknown) => void;
}

const actorStopped = new Error(
  'The turn machine stopped this actor (it left the state that invoked it).',
);
actorStopped.name = 'AbortError';

/** Finds the services of a live run: the actors are provided once per runtime, not per run. */
export type ServicesOf = (runId: string) => RunServices;

/**
 * An XState callback actor running one async task of the run named by its input. The task gets
 * the actor's own abort signal, aborted when the machine stops the actor (it left the state that
 * invoked it). Failures go to the run's `onError`: actors report outcomes only by committing facts.
 * Why not XState's `fromPromise`: its result would reach the machine as an `xstate.done.actor`
 * event no fact records, its rejection would error the machine instead of the run, and it
 * builds a fresh abort reason (with its stack) for each of the many actors a run stops.
 */
export function fromTask<TInput extends { runId: string }>(
  servicesOf: ServicesOf,
  task: (services: RunServices, input: TInput, signal: AbortSignal) => Promise<void>,
) {
  return fromCallback<EventObject, TInput>(({ input }) => {
    const controller = new AbortController();
    const services = servicesOf(input.runId);
    let running = true;
    task(services, input, controller.signal)
      .catch(services.onError)
      .finally(() => {
        running = false;
      });
    // Only a task still running needs its signal; a shared reason spares building a
    // DOMException (with its stack) for every actor the machine stops.
    return () => {
      if (running) controller.abort(actorStopped);
    };
  });
}
