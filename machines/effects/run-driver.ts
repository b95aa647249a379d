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

/** The fencing token every fact appended under a lease carries. */
export interface LeaseToken {
  workerId: string;
  leaseEpoch: number;
}

/** What a run driver is built from (`new RunDriver`). */
export interface RunDriverOptions {
  /** Where the run's facts are appended (the driver only appends). */
  store: Pick<EventStore, 'append'>;
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
   * every fact it appends; none on a store for one process. The store refuses a fact whose
   * lease is gone (`LeaseLostError`): the driver then fails, and no later fact of it lands.
   */
  token?: LeaseToken | undefined;
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
 * folds the proposals in order through the machine (`plan`), which gives each fact the `state`
 * it leads to and drops the ones the machine would not take (late output after a stop, I10; a
 * second settlement), appends them in one write (`write`), and only then hands them, in order,
 * to the live actor (`take`: `record`, then `adopt`): the machine sees a fact only once the whole
 * write is durable. The fold computes the live actor's own transitions with their effects held
 * (`heldTransition`), so a fact costs one XState transition, which the actor adopts once the fact
 * is durable. When the fold reaches `terminal`, the single `run.ended` (I7) joins the same append.
 */
export class RunDriver {
  readonly sessionId: string;
  readonly turnId: string;
  readonly runId: string;
  /** The lease the driver works under, fixed for its life (`undefined` on a store for one process). */
  readonly token: LeaseToken | undefined;
  /** Resolves with the run's `run.ended`; rejects if the log could not be written. */
  readonly ended: Promise<FactOf<'run.ended'>>;

  readonly #store: Pick<EventStore, 'append'>;
  readonly #machine: TurnMachine;
  readonly #facts: Fact[];
  readonly #now: () => number;
  readonly #generateId: IdGenerator;
  readonly #inspect: RunDriverOptions['inspect'];
  readonly #onFact: RunDriverOptions['onFact'];
  // With an inspector attached, the live actor computes its own transition when it takes the
  // fact, so the inspector sees every microstep in order; otherwise the live actor's transition
  // is computed in the plan, once, and held until the fact is durable.
  readonly #holdsTransitions: boolean;
  // Ids a proposal may repeat are the run's own (deterministic ids name the run's steps).
  readonly #knownIds: Set<string>;
  readonly #pending: Proposal[] = [];
  #actor: TurnActor | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #draining = false;
  #failure: unknown;
  #endedFact: FactOf<'run.ended'> | undefined;
  #resolveEnded!: (fact: FactOf<'run.ended'>) => void;
  #rejectEnded!: (error: unknown) => void;

  constructor(options: RunDriverOptions) {
    this.sessionId = options.sessionId;
    this.turnId = options.turnId;
    this.runId = options.runId;
    this.token = options.token;
    this.#store = options.store;
    this.#machine = options.machine;
    this.#facts = options.facts;
    this.#now = options.now;
    this.#generateId = options.generateId;
    this.#inspect = options.inspect;
    this.#onFact = options.onFact;
    this.#holdsTransitions = options.inspect === undefined;
    this.#knownIds = runFactIds(options.facts, options.runId);
    this.ended = new Promise<FactOf<'run.ended'>>((resolve, reject) => {
      this.#resolveEnded = resolve;
      this.#rejectEnded = reject;
    });
    this.ended.catch(ignore);
  }

  /** The session's facts, including every fact this driver committed (read-only: the driver's own). */
  facts(): readonly Fact[] {
    return this.#facts;
  }

  /**
   * Appends `run.started` (with the machine's initial state and version) and starts the live
   * actor.
   */
  begin(draft: Extract<ProposedFact, { type: 'run.started' }>): Promise<Fact> {
    return this.#serialize(() => this.#writeRunStarted(draft));
  }

  /**
   * Starts the live actor from a snapshot rebuilt from the log (rehydration). The snapshot's
   * children are dropped: an actor that was running before the restart must not be started
   * again by restoring it; actors start only through transitions committed from here on.
   */
  resume(snapshot: TurnSnapshot): Promise<void> {
    this.#start(Object.assign({}, this.#machine.getPersistedSnapshot(snapshot), { children: {} }));
    // A fold that reached terminal only lacked run.ended.
    if (snapshot.status !== 'done') return Promise.resolve();
    return this.#serialize(() => this.#writeRunEnded(snapshot));
  }

  /**
   * Commit, then transition. Resolves `false` when the fact was not taken (see above). A
   * `step.started` may bring the request it sends (`prepared`): the machine's event carries
   * it to the `providerStep` actor; the stored fact does not.
   */
  commit(draft: ProposedFact, prepared?: PreparedRequest): Promise<boolean> {
    return this.#propose([draft], prepared)[0] as Promise<boolean>;
  }

  /**
   * Commits facts in one append (a crash keeps a prefix of them at most): the machine sees
   * none of them before all are durable. Resolves with whether each was taken.
   */
  commitAll(drafts: readonly ProposedFact[]): Promise<boolean[]> {
    return Promise.all(this.#propose(drafts));
  }

  /** The live actor's snapshot (undefined before `begin`/`resume`). */
  snapshot(): TurnSnapshot | undefined {
    return this.#actor?.getSnapshot();
  }

  /** Marks the run as broken (an actor could not write the log): `ended` rejects, the actor stops. */
  fail(error: unknown): void {
    if (this.#failure !== undefined) return;
    this.#failure = error;
    for (const proposal of this.#pending.splice(0)) proposal.reject(error);
    this.#rejectEnded(error);
    this.#actor?.stop();
  }

  /** Stops the live actor without ending the run (the run stays in the log, e.g. parked). */
  release(): void {
    this.#actor?.stop();
  }

  /** Resolves when the commit queue is drained: every commit queued so far has finished. */
  drained(): Promise<void> {
    return this.#queue.then(ignore);
  }

  /** Runs `work` after the work queued before it; a failure fails the driver. */
  #serialize<T>(work: () => Promise<T>): Promise<T> {
    const result = this.#queue.then(() => {
      if (this.#failure !== undefined) throw this.#failure;
      return work();
    });
    this.#queue = result.catch((error) => {
      this.fail(error);
    });
    return result;
  }

  /** Queues proposals for the next append, and starts draining them unless a drain is under way. */
  #propose(drafts: readonly ProposedFact[], prepared?: PreparedRequest): Promise<boolean>[] {
    const results = drafts.map(
      (draft) =>
        new Promise<boolean>((settle, reject) => {
          if (this.#failure !== undefined) reject(this.#failure);
          else this.#pending.push({ draft, settle, reject, ...(prepared && { prepared }) });
        }),
    );
    if (!this.#draining && this.#failure === undefined) {
      this.#draining = true;
      this.#serialize(() => this.#drain()).catch(ignore); // fail() rejected every waiting proposal.
    }
    return results;
  }

  /** Commits the pending proposals, a batch per append, until none is left. */
  async #drain(): Promise<void> {
    try {
      while (this.#pending.length > 0) await this.#commitBatch(this.#pending.splice(0));
    } finally {
      this.#draining = false;
    }
  }

  async #commitBatch(batch: Proposal[]): Promise<void> {
    try {
      if (this.#actor === undefined) throw new Error('run driver: commit before the run started');
      const planned = this.#plan(batch, this.#actor);
      const stored =
        planned.length === 0 ? [] : await this.#write(planned.map((entry) => entry.fact));
      // Everything is durable: only now does the machine see the facts, in order.
      for (const [index, fact] of stored.entries()) this.#take(fact, planned[index] as Planned);
      // The others were not taken (settling a taken one again changes nothing).
      for (const proposal of batch) proposal.settle(false);
    } catch (error) {
      for (const proposal of batch) proposal.reject(error);
      throw error;
    }
  }

  /** Folds the proposals through the machine: which are taken, and the state each leads to. */
  #plan(batch: readonly Proposal[], live: TurnActor): Planned[] {
    const planned: Planned[] = [];
    const ids = new Set<string>();
    let snapshot = live.getSnapshot();
    for (const proposal of batch) {
      const { draft } = proposal;
      if (snapshot.status !== 'active') break;
      if (draft.id !== undefined && (this.#knownIds.has(draft.id) || ids.has(draft.id))) continue;
      const fact = this.#envelope(draft, '');
      // The store assigns this same seq: appends are serialized and checked with expectedSeq.
      const probe = machineEvent(
        { ...fact, seq: this.#lastSeq() + planned.length + 1 } as Fact,
        proposal.prepared,
      );
      const held = this.#holdsTransitions ? heldTransition(live, snapshot, probe) : undefined;
      const next = held?.snapshot ?? pureTransition(this.#machine, snapshot, probe);
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
    if (snapshot.status === 'done' && this.#endedFact === undefined) {
      planned.push({
        proposal: undefined,
        fact: this.#runEnded(snapshot),
        held: undefined,
        reached: snapshot,
      });
    }
    return planned;
  }

  /** Appends facts in one write; every one of them must be new (the driver checked their ids). */
  async #write(batch: readonly NewFact[]): Promise<Fact[]> {
    const { appended } = await this.#store.append(this.sessionId, batch, {
      expectedSeq: this.#lastSeq(),
    });
    if (appended.length !== batch.length) throw this.#repeatedId(batch, appended);
    return appended;
  }

  /** Why an append stored fewer facts than it was given: one of their ids was in the log already. */
  #repeatedId(batch: readonly NewFact[], appended: readonly Fact[]): Error {
    const { sessionId, runId, token } = this;
    const known = batch.filter((fact) => !appended.some((stored) => stored.id === fact.id));
    if (token !== undefined) {
      // Another driver appended this run's deterministic ids (a tool.started, a decision)
      // after this one's lease lapsed: the log went on without it.
      return new LeaseLostError({
        message: `run driver: fact ${known[0]?.id} of run ${runId} is already in session ${sessionId}, appended by another driver: worker ${token.workerId} lost epoch ${token.leaseEpoch} of the run's lease`,
        sessionId,
        runId,
        workerId: token.workerId,
        epoch: token.leaseEpoch,
        current: undefined,
      });
    }
    return new Error(
      `run driver: fact ${known[0]?.id} is already in session ${sessionId}; generateId must not repeat ids`,
    );
  }

  /** A planned fact is durable: the live actor takes it, and its proposal is settled. */
  #take(fact: Fact, { proposal, held, reached }: Planned): void {
    if (this.#failure !== undefined) {
      // The driver failed while the write was in flight (a worker found its lease lost): the
      // facts are in the log, taken, and the run goes on from it elsewhere; no actor here.
      this.#facts.push(fact);
      this.#knownIds.add(fact.id);
      proposal?.settle(true);
      return;
    }
    if (fact.type === 'run.ended') {
      this.#end(fact, reached);
      return;
    }
    this.#record(fact, reached);
    this.#adopt(fact, held, proposal?.prepared);
    proposal?.settle(true);
  }

  /** A fact is durable: the session's facts, the run's subscribers. */
  #record(stored: Fact, reached: TurnSnapshot): void {
    this.#facts.push(stored);
    this.#knownIds.add(stored.id);
    this.#onFact?.(stored, reached);
  }

  /** The live actor takes a durable fact and must reach the state the fact recorded. */
  #adopt(
    fact: Fact,
    held: HeldTransition<TurnSnapshot> | undefined,
    prepared: PreparedRequest | undefined,
  ): void {
    const live = this.#actor as TurnActor;
    if (held?.adopt(fact) !== true) live.send(machineEvent(fact, prepared));
    const liveState = statePath(live.getSnapshot().value);
    if (liveState !== fact.state) {
      throw new Error(
        `run driver: ${fact.type} (seq ${fact.seq}) recorded ${fact.state} but the machine is in ${liveState}`,
      );
    }
  }

  /** `run.ended` is durable: the actor stops and `ended` resolves. */
  #end(fact: Fact, reached: TurnSnapshot): void {
    this.#record(fact, reached);
    this.#endedFact = fact as FactOf<'run.ended'>;
    this.#actor?.stop();
    this.#resolveEnded(this.#endedFact);
  }

  async #writeRunStarted(draft: Extract<ProposedFact, { type: 'run.started' }>): Promise<Fact> {
    const { sessionId, turnId, runId } = this;
    const [initial] = initialTransition(this.#machine, {
      sessionId,
      turnId,
      runId,
      limits: draft.limits,
    });
    const versioned = { ...draft, machineVersion: this.#machine.version };
    const [stored] = await this.#write([this.#envelope(versioned, statePath(initial.value))]);
    this.#record(stored as Fact, initial);
    this.#start();
    return stored as Fact;
  }

  async #writeRunEnded(snapshot: TurnSnapshot): Promise<void> {
    const [stored] = await this.#write([this.#runEnded(snapshot)]);
    this.#end(stored as Fact, snapshot);
  }

  #start(snapshot?: Snapshot<unknown>): void {
    const actor = createActor(this.#machine, {
      input: this.#turnInput(),
      ...(snapshot === undefined ? {} : { snapshot }),
      ...(this.#inspect ? { inspect: this.#inspect } : {}),
    });
    this.#actor = actor;
    actor.subscribe({ error: (error) => this.fail(error) });
    actor.start();
  }

  #turnInput(): TurnInput {
    const { sessionId, turnId, runId } = this;
    const runStarted = this.#facts.findLast(
      (fact) => fact.type === 'run.started' && fact.runId === runId,
    ) as FactOf<'run.started'>;
    return { sessionId, turnId, runId, limits: runStarted.limits };
  }

  #runEnded(snapshot: TurnSnapshot): NewFact {
    return this.#envelope({ type: 'run.ended', ...(snapshot.output as TurnOutcome) }, 'terminal');
  }

  #envelope(draft: ProposedFact, state: string): NewFact {
    const { sessionId, turnId, runId } = this;
    return {
      ...draft,
      id: draft.id ?? this.#generateId('fact'),
      at: new Date(this.#now()).toISOString(),
      sessionId,
      turnId,
      runId,
      state,
      ...this.token,
    } as NewFact;
  }

  #lastSeq(): number {
    return this.#facts.at(-1)?.seq ?? 0;
  }
}

/** The ids of the run's facts so far, read back from the end of the session's facts. */
function runFactIds(facts: readonly Fact[], runId: string): Set<string> {
  const ids = new Set<string>();
  for (let index = facts.length - 1; index >= 0; index -= 1) {
    const fact = facts[index] as Fact;
    if (fact.runId === runId) ids.add(fact.id);
    if (fact.type === 'run.started' && fact.runId === runId) break;
  }
  return ids;
}

/** The event the machine takes for a durable fact: a `step.started` with its prepared request. */
function machineEvent(fact: Fact, prepared: PreparedRequest | undefined): TurnMachineEvent {
  return prepared !== undefined && fact.type === 'step.started' ? { ...fact, prepared } : fact;
}

function ignore() {}
