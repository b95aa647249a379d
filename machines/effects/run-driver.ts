import {
  createActor,
  type InspectionEvent,
  initialTransition,
  type Observer,
  type Snapshot,
} from 'xstate';
import type { Fact, FactOf, NewFact, ProposedFact } from '../../events/facts.ts';
import type { IdGenerator } from '../../events/ids.ts';
import type { EventStore } from '../../store/event-store.ts';
import { LeaseLostError } from '../../store/run-leases.ts';
import type { PreparedRequest, TurnMachineEvent } from '../pure/actor-inputs.ts';
import { type HeldTransition, heldTransition, pureTransition } from '../pure/pure-transition.ts';
import { statePath } from '../pure/state-path.ts';
import type { TurnInput, TurnOutcome } from '../pure/turn-context.ts';
import type { TurnActor, TurnMachine, TurnSnapshot } from '../pure/turn-machine.ts';
import type { LeaseToken } from './worker-leases.ts';

export interface RunDriverOptions {
  store: EventStore;
  /** The turn machine with live actors provided (`turnMachine.provide(...)`). */
  machine: TurnMachine;
  sessionId: string;
  turnId: string;
  runId: string;
  /**
   * The session's facts so far. The driver takes this array over: it alone appends to it as it
   * commits; the runtime and the actors read it through `facts()`, and keep no reference of
   * their own to write through.
   */
  facts: Fact[];
  now: () => number;
  generateId: IdGenerator;
  inspect?: ((event: InspectionEvent) => void) | Observer<InspectionEvent>;
  /**
   * Called after each fact is durable, just before the live actor takes it (and for `run.ended`),
   * with the state it leads to: the runtime reacts to that state's tags, never to its name.
   */
  onFact?: (fact: Fact, reached: TurnSnapshot) => void;
  /**
   * The fencing token of the worker's lease on the run (`workerId`, `leaseEpoch`), stamped on
   * every fact it appends; `undefined` on a store for one process. The store refuses a fact whose
   * lease is gone (`LeaseLostError`): the driver then fails, and no later fact of it lands.
   */
  token?: () => LeaseToken | undefined;
}

/** A fact an actor proposed, waiting for the next append. */
interface Proposal {
  draft: ProposedFact;
  /** The request a proposed `step.started` sends: the machine's event carries it, the log not. */
  prepared?: PreparedRequest;
  settle: (taken: boolean) => void;
  reject: (error: unknown) => void;
}

/** A fact of the next append: its proposal (none for `run.ended`) and the fact with its `state`. */
interface Planned {
  proposal: Proposal | undefined;
  fact: NewFact;
  /** The live actor's transition on it, computed already and held until the fact is durable. */
  held: HeldTransition<TurnSnapshot> | undefined;
  /** The state the fact leads to. */
  reached: TurnSnapshot;
}

/**
 * Commit, then transition (I3). The driver owns one run's live actor. Facts that actors propose
 * while an append is in flight wait and go out together in the next append (a per-run group
 * commit); `commitAll` proposes facts that must share one append. For each append the driver
 * folds the proposals in order through the machine, which gives each fact the `state` it leads
 * to and drops the ones the machine would not take (late output after a stop, I10; a second
 * settlement), appends them in one write, and only then hands them, in order, to the live
 * actor: the machine sees a fact only once the whole write is durable. The fold computes the
 * live actor's own transitions with their effects held (`heldTransition`), so a fact costs one
 * XState transition, which the actor adopts once the fact is durable. When the fold reaches
 * `terminal`, the single `run.ended` (I7) joins the same append.
 */
export function createRunDriver(options: RunDriverOptions) {
  const { store, machine, sessionId, turnId, runId, facts, now, generateId } = options;
  const holdsTransitions = options.inspect === undefined;
  let actor: TurnActor | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  const pending: Proposal[] = [];
  let draining = false;
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
  // Ids a proposal may repeat are the run's own (deterministic ids name the run's steps): read
  // the run's facts back from the end, not the whole session.
  const knownIds = new Set<string>();
  for (let index = facts.length - 1; index >= 0; index -= 1) {
    const fact = facts[index] as Fact;
    if (fact.runId === runId) knownIds.add(fact.id);
    if (fact.type === 'run.started' && fact.runId === runId) break;
  }

  const envelope = (draft: ProposedFact, state: string): NewFact =>
    ({
      ...draft,
      id: draft.id ?? generateId('fact'),
      at: new Date(now()).toISOString(),
      sessionId,
      turnId,
      runId,
      state,
      ...options.token?.(),
    }) as NewFact;

  /** Appends facts in one write; every one of them must be new (the driver checked their ids). */
  async function write(batch: readonly NewFact[]): Promise<Fact[]> {
    const { appended } = await store.append(sessionId, batch, { expectedSeq: lastSeq() });
    if (appended.length !== batch.length) {
      const known = batch.filter((fact) => !appended.some((stored) => stored.id === fact.id));
      const token = options.token?.();
      if (token !== undefined) {
        // Another driver appended this run's deterministic ids (a tool.started, a decision)
        // after this one's lease lapsed: the log went on without it.
        throw new LeaseLostError({
          message: `run driver: fact ${known[0]?.id} of run ${runId} is already in session ${sessionId}, appended by another driver: worker ${token.workerId} lost epoch ${token.leaseEpoch} of the run's lease`,
          sessionId,
          runId,
          workerId: token.workerId,
          epoch: token.leaseEpoch,
          current: undefined,
        });
      }
      throw new Error(
        `run driver: fact ${known[0]?.id} is already in session ${sessionId}; generateId must not repeat ids`,
      );
    }
    return appended;
  }

  /** A fact is durable: the session's facts, the run's subscribers. */
  function record(stored: Fact, reached: TurnSnapshot) {
    facts.push(stored);
    knownIds.add(stored.id);
    options.onFact?.(stored, reached);
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
    for (const proposal of pending.splice(0)) proposal.reject(error);
    rejectEnded(error);
    actor?.stop();
  }

  function propose(
    drafts: readonly ProposedFact[],
    prepared?: PreparedRequest,
  ): Promise<boolean>[] {
    const results = drafts.map(
      (draft) =>
        new Promise<boolean>((settle, reject) => {
          if (failure !== undefined) reject(failure);
          else pending.push({ draft, settle, reject, ...(prepared && { prepared }) });
        }),
    );
    if (!draining && failure === undefined) {
      draining = true;
      serialize(async () => {
        try {
          while (pending.length > 0) await commitBatch(pending.splice(0));
        } finally {
          draining = false;
        }
      }).catch(() => {
        // fail() rejected every waiting proposal.
      });
    }
    return results;
  }

  /** Folds the proposals through the machine: which are taken, and the state each leads to. */
  function plan(batch: readonly Proposal[], live: TurnActor): Planned[] {
    const from = live.getSnapshot();
    const planned: Planned[] = [];
    const ids = new Set<string>();
    let snapshot = from;
    for (const proposal of batch) {
      const { draft } = proposal;
      if (snapshot.status !== 'active') break;
      if (draft.id !== undefined && (knownIds.has(draft.id) || ids.has(draft.id))) continue;
      const fact = envelope(draft, '');
      // The store assigns this same seq: appends are serialized and checked with expectedSeq.
      const probe = machineEvent(
        { ...fact, seq: lastSeq() + planned.length + 1 } as Fact,
        proposal.prepared,
      );
      // With an inspector attached, the live actor computes its own transition when it takes
      // the fact, so the inspector sees every microstep in order; otherwise the live actor's
      // transition is computed here, once, and held until the fact is durable.
      const held = holdsTransitions ? heldTransition(live, snapshot, probe) : undefined;
      const next = held?.snapshot ?? pureTransition(machine, snapshot, probe);
      // XState returns the very same snapshot when no transition takes the event.
      if (next === snapshot) continue;
      ids.add(fact.id);
      planned.push({
        proposal,
        fact: { ...fact, state: statePath(next.value) } as NewFact,
        held,
        reached: next,
      });
      snapshot = next;
    }
    if (snapshot.status === 'done' && ended === undefined) {
      planned.push({
        proposal: undefined,
        fact: runEnded(snapshot),
        held: undefined,
        reached: snapshot,
      });
    }
    return planned;
  }

  function runEnded(snapshot: TurnSnapshot): NewFact {
    return envelope({ type: 'run.ended', ...(snapshot.output as TurnOutcome) }, 'terminal');
  }

  async function commitBatch(batch: Proposal[]) {
    try {
      if (actor === undefined) throw new Error('run driver: commit before the run started');
      const planned = plan(batch, actor);
      const stored = planned.length === 0 ? [] : await write(planned.map((entry) => entry.fact));
      // Everything is durable: only now does the machine see the facts, in order.
      for (const [index, fact] of stored.entries()) {
        const { proposal, held, reached } = planned[index] as Planned;
        if (failure !== undefined) {
          // The driver failed while the write was in flight (a worker found its lease lost): the
          // facts are in the log, taken, and the run goes on from it elsewhere; no actor here.
          facts.push(fact);
          knownIds.add(fact.id);
          proposal?.settle(true);
          continue;
        }
        if (fact.type === 'run.ended') {
          end(fact, reached);
          continue;
        }
        record(fact, reached);
        adopt(fact, held, proposal?.prepared);
        proposal?.settle(true);
      }
      // The others were not taken (settling a taken one again changes nothing).
      for (const proposal of batch) proposal.settle(false);
    } catch (error) {
      for (const proposal of batch) proposal.reject(error);
      throw error;
    }
  }

  /** The live actor takes a durable fact and must reach the state the fact recorded. */
  function adopt(
    fact: Fact,
    held: HeldTransition<TurnSnapshot> | undefined,
    prepared: PreparedRequest | undefined,
  ) {
    const live = actor as TurnActor;
    if (held?.adopt(fact) !== true) live.send(machineEvent(fact, prepared));
    const liveState = statePath(live.getSnapshot().value);
    if (liveState !== fact.state) {
      throw new Error(
        `run driver: ${fact.type} (seq ${fact.seq}) recorded ${fact.state} but the machine is in ${liveState}`,
      );
    }
  }

  function end(fact: Fact, reached: TurnSnapshot) {
    record(fact, reached);
    ended = fact as FactOf<'run.ended'>;
    actor?.stop();
    resolveEnded(ended);
  }

  function start(snapshot?: Snapshot<unknown>) {
    actor = createActor(machine, {
      input: turnInput(),
      ...(snapshot === undefined ? {} : { snapshot }),
      ...(options.inspect ? { inspect: options.inspect } : {}),
    });
    actor.subscribe({ error: (error) => fail(error) });
    actor.start();
  }

  function turnInput(): TurnInput {
    const runStarted = facts.findLast(
      (fact) => fact.type === 'run.started' && fact.runId === runId,
    ) as FactOf<'run.started'>;
    return { sessionId, turnId, runId, limits: runStarted.limits };
  }

  return {
    runId,
    /** The session's facts, including every fact this driver committed (read-only: the driver's own). */
    facts(): readonly Fact[] {
      return facts;
    },
    /** Resolves with the run's `run.ended`; rejects if the log could not be written. */
    ended: endedPromise,

    /**
     * Appends `run.started` (with the machine's initial state and version) and starts the live
     * actor.
     */
    begin(draft: Extract<ProposedFact, { type: 'run.started' }>) {
      return serialize(async () => {
        const [initial] = initialTransition(machine, {
          sessionId,
          turnId,
          runId,
          limits: draft.limits,
        });
        const versioned = { ...draft, machineVersion: machine.version };
        const [stored] = await write([envelope(versioned, statePath(initial.value))]);
        record(stored as Fact, initial);
        start();
        return stored as Fact;
      });
    },

    /**
     * Starts the live actor from a snapshot rebuilt from the log (rehydration). The snapshot's
     * children are dropped: an actor that was running before the restart must not be started
     * again by restoring it; actors start only through transitions committed from here on.
     */
    resume(snapshot: TurnSnapshot) {
      start(Object.assign({}, machine.getPersistedSnapshot(snapshot), { children: {} }));
      // A fold that reached terminal only lacked run.ended.
      if (snapshot.status !== 'done') return Promise.resolve();
      return serialize(async () => {
        const [stored] = await write([runEnded(snapshot)]);
        end(stored as Fact, snapshot);
      });
    },

    /**
     * Commit, then transition. Resolves `false` when the fact was not taken (see above). A
     * `step.started` may bring the request it sends (`prepared`): the machine's event carries
     * it to the `providerStep` actor; the stored fact does not.
     */
    commit(draft: ProposedFact, prepared?: PreparedRequest): Promise<boolean> {
      return propose([draft], prepared)[0] as Promise<boolean>;
    },

    /**
     * Commits facts in one append (a crash keeps a prefix of them at most): the machine sees
     * none of them before all are durable. Resolves with whether each was taken.
     */
    commitAll(drafts: readonly ProposedFact[]): Promise<boolean[]> {
      return Promise.all(propose(drafts));
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

    /** Resolves when the commit queue is drained: every commit queued so far has finished. */
    drained(): Promise<void> {
      return queue.then(() => {});
    },
  };
}

export type RunDriver = ReturnType<typeof createRunDriver>;

/** The event the machine takes for a durable fact: a `step.started` with its prepared request. */
function machineEvent(fact: Fact, prepared: PreparedRequest | undefined): TurnMachineEvent {
  return prepared !== undefined && fact.type === 'step.started' ? { ...fact, prepared } : fact;
}
