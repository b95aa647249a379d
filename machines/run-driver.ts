import {
  type Actor,
  createActor,
  type InspectionEvent,
  initialTransition,
  type Observer,
} from 'xstate';
import type { Fact, FactDraft, FactOf, NewFact } from '../events/facts.ts';
import type { IdGenerator } from '../events/ids.ts';
import type { EventStore } from '../store/event-store.ts';
import { pureTransition } from './pure-transition.ts';
import { stateToString } from './state-path.ts';
import type { TurnInput, TurnOutcome } from './turn-context.ts';
import type { turnMachine } from './turn-machine.ts';

/** The turn machine with the runtime's actors provided. */
export type TurnMachine = typeof turnMachine;
export type TurnActor = Actor<TurnMachine>;
type TurnSnapshot = ReturnType<TurnActor['getSnapshot']>;

export interface RunDriverOptions {
  store: EventStore;
  /** The turn machine with live actors provided (`turnMachine.provide(...)`). */
  machine: TurnMachine;
  sessionId: string;
  turnId: string;
  runId: string;
  /** The session's facts so far (the driver keeps this array up to date as it commits). */
  facts: Fact[];
  now: () => number;
  generateId: IdGenerator;
  inspect?: ((event: InspectionEvent) => void) | Observer<InspectionEvent>;
  /** Called after each fact is durable and the machine took it (and for `run.ended`). */
  onFact?: (fact: Fact) => void;
}

/**
 * Commit, then transition (I3). The driver owns one run's live actor. For each fact an actor
 * proposes it computes the state the fact leads to with a pure transition (no action runs),
 * appends the fact with that `state`, and only then sends it to the live actor. Commits are serialized,
 * so concurrent tool actors' facts reach the log and the machine in one order. A fact the
 * machine would not take (late output after a stop, I10; a second settlement) is dropped, not
 * logged. When the machine reaches `terminal`, the driver appends the single `run.ended` (I7).
 */
export function createRunDriver(options: RunDriverOptions) {
  const { store, machine, sessionId, turnId, runId, facts, now, generateId } = options;
  let actor: TurnActor | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  let failure: unknown;
  let ended: FactOf<'run.ended'> | undefined;
  let resolveEnded!: (fact: FactOf<'run.ended'>) => void;
  let rejectEnded!: (error: unknown) => void;
  const endedPromise = new Promise<FactOf<'run.ended'>>((resolve, reject) => {
    resolveEnded = resolve;
    rejectEnded = reject;
  });
  endedPromise.catch(() => {});

  const lastSeq = () => facts.at(-1)?.seq ?? 0;
  const knownIds = new Set(facts.map((fact) => fact.id));

  const envelope = (draft: FactDraft, state: string): NewFact =>
    ({
      ...draft,
      id: draft.id ?? generateId('fact'),
      at: new Date(now()).toISOString(),
      sessionId,
      turnId,
      runId,
      state,
    }) as NewFact;

  async function append(fact: NewFact): Promise<Fact | undefined> {
    const { appended } = await store.append(sessionId, [fact], { expectedSeq: lastSeq() });
    const stored = appended[0];
    if (stored !== undefined) {
      facts.push(stored);
      knownIds.add(stored.id);
      options.onFact?.(stored);
    }
    return stored;
  }

  function serialize<T>(work: () => Promise<T>): Promise<T> {
    const result = queue.then(() => {
      if (failure !== undefined) throw failure;
      return work();
    });
    queue = result.catch((error) => {
      fail(error);
    });
    return result;
  }

  function fail(error: unknown) {
    if (failure !== undefined) return;
    failure = error;
    rejectEnded(error);
    actor?.stop();
  }

  async function endIfDone(snapshot: TurnSnapshot) {
    if (snapshot.status !== 'done' || ended !== undefined) return;
    const outcome = snapshot.output as TurnOutcome;
    const stored = await append(envelope({ type: 'run.ended', ...outcome }, 'terminal'));
    ended = (stored ??
      facts.findLast(
        (fact) => fact.type === 'run.ended' && fact.runId === runId,
      )) as FactOf<'run.ended'>;
    actor?.stop();
    resolveEnded(ended);
  }

  function start(snapshot?: unknown) {
    actor = createActor(machine, {
      input: turnInput(),
      ...(snapshot === undefined ? {} : { snapshot: snapshot as never }),
      ...(options.inspect ? { inspect: options.inspect } : {}),
    });
    actor.subscribe({ error: (error) => fail(error) });
    actor.start();
  }

  function turnInput(): TurnInput {
    const runStarted = facts.find(
      (fact) => fact.type === 'run.started' && fact.runId === runId,
    ) as FactOf<'run.started'>;
    return { sessionId, turnId, runId, limits: runStarted.limits };
  }

  return {
    runId,
    /** The session's facts, including every fact this driver committed. */
    facts: facts as readonly Fact[],
    /** Resolves with the run's `run.ended`; rejects if the log could not be written. */
    ended: endedPromise,

    /**
     * Appends `run.started` (with the machine's initial state and version) and starts the live
     * actor.
     */
    begin(draft: Extract<FactDraft, { type: 'run.started' }>) {
      return serialize(async () => {
        const [initial] = initialTransition(machine, {
          sessionId,
          turnId,
          runId,
          limits: draft.limits,
        });
        const versioned = { ...draft, machineVersion: machine.version };
        const stored = await append(envelope(versioned, stateToString(initial.value)));
        if (stored === undefined)
          throw new Error(`run.started for ${runId} was already in the log`);
        start();
        return stored;
      });
    },

    /**
     * Starts the live actor from a snapshot rebuilt from the log (rehydration). The snapshot's
     * children are dropped: an actor that was running before the restart must not be started
     * again by restoring it; actors start only through transitions committed from here on.
     */
    resume(snapshot: TurnSnapshot) {
      const persisted = machine.getPersistedSnapshot(snapshot) as { children?: unknown };
      start({ ...persisted, children: {} });
      if (snapshot.status === 'done') return serialize(() => endIfDone(snapshot));
      return Promise.resolve();
    },

    /** Commit, then transition. Resolves `false` when the fact was not taken (see above). */
    commit(draft: FactDraft): Promise<boolean> {
      return serialize(async () => {
        if (actor === undefined) throw new Error('run driver: commit before the run started');
        const snapshot = actor.getSnapshot();
        if (snapshot.status !== 'active') return false;
        if (draft.id !== undefined && knownIds.has(draft.id)) return false;
        const fact = envelope(draft, '');
        // The store assigns this same seq: appends are serialized and checked with expectedSeq.
        const probe = { ...fact, seq: lastSeq() + 1 } as Fact;
        const next = pureTransition(machine, snapshot, probe);
        // XState returns the very same snapshot when no transition takes the event.
        if (next === snapshot) return false;
        const state = stateToString(next.value);
        const stored = await append({ ...fact, state });
        if (stored === undefined) {
          // A deterministic id already in the log is a repeat (a no-op); a generated one is not.
          if (draft.id !== undefined) return false;
          throw new Error(
            `run driver: generated fact id ${fact.id} is already in session ${sessionId}; generateId must not repeat ids`,
          );
        }
        actor.send(stored);
        const live = actor.getSnapshot();
        const liveState = stateToString(live.value);
        if (liveState !== state) {
          throw new Error(
            `run driver: ${stored.type} (seq ${stored.seq}) recorded ${state} but the machine is in ${liveState}`,
          );
        }
        await endIfDone(live);
        return true;
      });
    },

    /** The live actor's snapshot (undefined before `begin`/`resume`). */
    snapshot(): TurnSnapshot | undefined {
      return actor?.getSnapshot();
    },

    /** Marks the run as broken (an actor could not write the log): `ended` rejects, the actor stops. */
    fail,

    /** Stops the live actor without ending the run (the run stays in the log, e.g. parked). */
    release() {
      actor?.stop();
    },

    /** Resolves when every commit queued so far has finished. */
    settled(): Promise<void> {
      return queue.then(() => {});
    },
  };
}

export type RunDriver = ReturnType<typeof createRunDriver>;
