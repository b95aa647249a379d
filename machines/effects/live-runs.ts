import type { InspectionEvent, Observer } from 'xstate';
import type { ModelAdapter } from '../../adapters/model-adapter.ts';
import type { Fact, RunLimits } from '../../events/facts.ts';
import type { IdGenerator } from '../../events/ids.ts';
import { DamagedSessionError } from '../../runtime-errors.ts';
import type { EventStore, StoreFinding } from '../../store/event-store.ts';
import type { InboxItem } from '../../store/run-inbox.ts';
import { LeaseLostError, type RunLeaseState } from '../../store/run-leases.ts';
import type { ToolSetSource } from '../../tools/tool-set-source.ts';
import {
  type DamagedRun,
  type LoadedRun,
  recoveredCallIds,
  recoveryFacts,
} from '../pure/resume-run.ts';
import type { TurnMachine } from '../pure/turn-machine.ts';
import { loadRun } from './load-run.ts';
import { provideRunEffects, type RunLifecycle } from './run-actors.ts';
import { type LeaseToken, RunDriver } from './run-driver.ts';
import { createRunHandles, type RunIds } from './run-handles.ts';
import { isRefusal } from './run-requests.ts';
import type { RunServices } from './run-services.ts';
import { createSessionCache } from './session-cache.ts';
import { createSessionLocks } from './session-locks.ts';
import { type TurnHandle, turnResult } from './turn-channel.ts';
import { isGranted, type SharedStore, type WorkerLeases } from './worker-leases.ts';

/** What `recover()` found for one unfinished run (or one session it could not read). */
export type RecoveredRun =
  | {
      sessionId: string;
      runId: string;
      /** The state the run was in when its process stopped. */
      interruptedIn: string | undefined;
      /** Calls that started and never settled: they may have run, and are never run again (I8). */
      indeterminate: string[];
      /** `resumed`: running again; `parked`: waiting for `decide()`; `ended`: only `run.ended` was missing. */
      status: 'resumed' | 'parked' | 'ended';
      turn: TurnHandle;
    }
  | {
      /** `undefined` only when the store could not even tell which session it found. */
      sessionId: string | undefined;
      /** `undefined` when the session could not be read far enough to name its run. */
      runId: string | undefined;
      interruptedIn: string | undefined;
      /**
       * The log cannot be resumed as it is: reported, never repaired, and nothing was written to
       * it. `decide()`, `steer()` and `stop()` on the session throw `DamagedSessionError`.
       */
      status: 'damaged';
      /** What is wrong, in words: the store's findings, the log's damage, a divergence. */
      damage: string[];
      /** What the store found in the session's stored form (`store.findings()`). */
      findings: StoreFinding[];
    };

interface LiveRun {
  driver: RunDriver;
  controller: AbortController;
  /** With a worker: the epoch of the lease the driver works under. */
  epoch: number | undefined;
}

export interface LiveRunsOptions {
  store: EventStore;
  adapter: ModelAdapter;
  /** Each run's tool set, read when the run is opened and kept until it ends. */
  tools: ToolSetSource;
  system: string | undefined;
  now: () => number;
  generateId: IdGenerator;
  random: () => number;
  inspect: ((event: InspectionEvent) => void) | Observer<InspectionEvent> | undefined;
  /** The error work on a session gets once the runtime is closed. */
  closedError: () => Error;
  /** The turn machine, before its live actors are provided (default `turnMachine`; tests of upgrades pass another version). */
  machine?: TurnMachine;
  /** With a store several workers share: this worker's leases, and how it performs a request from the inbox. */
  worker?: LiveRunsWorker;
}

/** What live runs need of a worker (architecture/workers.md, "The runtime side"). */
export interface LiveRunsWorker {
  store: SharedStore;
  leases: WorkerLeases;
  /** Performs a request another worker posted for a run this one drives (its decide/steer/stop). */
  perform: (driver: RunDriver, item: InboxItem) => Promise<void>;
  /** A request could not be performed or settled for a reason that is not the request's. */
  onError: (error: unknown) => void;
}

/** The session's unfinished run is driven by another worker, under this live lease. */
export interface DrivenElsewhere {
  elsewhere: RunLeaseState;
}

/**
 * The runtime's session registry: the per-session lock, and the live runs, at most one per
 * session, each a run driver with its live actor and the services its actors use. A run whose
 * state is tagged `parked` is dropped and rebuilt from the log when something arrives for it;
 * the runtime then keeps only the `done` resolvers of its handle.
 *
 * With a worker (a store several processes share), a run is driven here only under this
 * worker's lease: taken before the run is started or rebuilt, stamped on each of its facts,
 * released when it parks, handed over on `close()`. While it drives a run it takes the requests
 * other workers post to the run's inbox; a handle of a run it does not drive (parked, lost, taken
 * over) follows the run through the store until it ends.
 */
export function createLiveRuns(options: LiveRunsOptions) {
  const { store, generateId, worker } = options;
  const locks = createSessionLocks(options.closedError);
  const { withSession } = locks;
  const live = new Map<string, LiveRun>();
  // The actors are provided once; each finds its run's services here by runId.
  const runServices = new Map<string, RunServices>();
  const servicesOf = (runId: string) => {
    const services = runServices.get(runId);
    if (services === undefined)
      throw new Error(`turnlog: no live run ${runId} (an actor outlived its run)`);
    return services;
  };
  const lifecycle: RunLifecycle = {
    abort({ sessionId, runId }, reason) {
      const run = live.get(sessionId);
      if (run?.driver.runId === runId) run.controller.abort(new Error(reason));
    },
  };
  const machine = provideRunEffects(servicesOf, lifecycle, options.machine);
  // Per unfinished run: its handles' sinks; with a worker, they follow a run not driven here.
  const handles = createRunHandles({
    store,
    follows: worker !== undefined,
    onError: (error) => worker?.onError(error),
  });
  const { newHandle } = handles;
  // With a worker, per run driven here: its inbox subscription.
  const inboxes = new Map<string, () => void>();
  // Sessions whose last run ended: their log and history, for the session's next run.
  const endedSessions = createSessionCache();

  /** Wires one run's driver, services and live actor. */
  function open(ids: RunIds, facts: Fact[], limits: RunLimits): RunDriver {
    const controller = new AbortController();
    // The lease this driver works under: its epoch is fixed for the driver's life, so a driver
    // that lost the run never stamps a later epoch (this worker may take the run again).
    const token = worker === undefined ? undefined : leaseToken(ids);
    const sink = handles.drivenHere(ids, facts);
    let driver!: RunDriver;
    const history = endedSessions.history(ids.sessionId);
    runServices.set(ids.runId, {
      adapter: options.adapter,
      ...options.tools.forRun(ids.runId),
      system: options.system,
      limits,
      store,
      facts: () => driver.facts(),
      history,
      commit: (draft, prepared) => driver.commit(draft, prepared),
      commitAll: (drafts) => driver.commitAll(drafts),
      signal: controller.signal,
      generateId,
      random: options.random,
      emit: (event) => sink.push(event),
      onError: (error) => driver.fail(error),
    });
    driver = new RunDriver({
      store,
      machine,
      ...ids,
      facts,
      now: options.now,
      generateId,
      ...(options.inspect ? { inspect: options.inspect } : {}),
      token,
      onFact: (fact, reached) => {
        sink.push(fact);
        if (reached.hasTag('parked')) park(ids, driver);
      },
    });
    driver.ended.then(
      () => {
        handles.end(ids.runId, turnResult(driver.facts(), ids.runId));
        endedSessions.keep(ids.sessionId, driver.facts(), history);
        forget(ids, driver);
      },
      (error) => {
        endedSessions.drop(ids.sessionId);
        if (worker !== undefined && LeaseLostError.isInstance(error)) return lose(ids, driver);
        handles.fail(ids.runId, error);
        forget(ids, driver);
      },
    );
    live.set(ids.sessionId, { driver, controller, epoch: token?.leaseEpoch });
    if (worker !== undefined) {
      inboxes.set(
        ids.runId,
        worker.store.subscribeInbox(ids.sessionId, (item) => takeRequest(ids, item)),
      );
    }
    return driver;
  }

  /** The lease this worker holds on a run it is about to drive. */
  function leaseToken(ids: RunIds): LeaseToken {
    const lease = worker?.leases.held(ids.runId);
    // Lost since it was taken (a renewal came too late): somebody else's to drive now.
    if (worker === undefined || lease === undefined) throw lostLease(ids, undefined);
    return { workerId: worker.leases.workerId, leaseEpoch: lease.epoch };
  }

  /** The error a driver fails with once this worker no longer holds its lease. */
  function lostLease(ids: RunIds, epoch: number | undefined) {
    const workerId = worker?.leases.workerId ?? '';
    return new LeaseLostError({
      message: `worker ${workerId} lost epoch ${epoch} of run ${ids.runId}'s lease (it expired before a renewal, or the run was taken over); it drives the run no more`,
      sessionId: ids.sessionId,
      runId: ids.runId,
      workerId,
      epoch: epoch ?? 0,
      current: undefined,
    });
  }

  /**
   * The run is no longer driven here: its actor, services and inbox go (its handle stays), and
   * (`forgetLease`) the lease it drove under, unless this worker holds a newer one already.
   */
  function drop(ids: RunIds, driver: RunDriver, forgetLease = false) {
    const running = live.get(ids.sessionId);
    if (running?.driver !== driver) return;
    live.delete(ids.sessionId);
    runServices.delete(ids.runId);
    inboxes.get(ids.runId)?.();
    inboxes.delete(ids.runId);
    if (forgetLease && worker?.leases.held(ids.runId)?.epoch === running.epoch) {
      worker?.leases.forget(ids.runId);
    }
  }

  /** The run is over (or its driver failed): the runtime keeps nothing of it (its handles were told). */
  function forget(ids: RunIds, driver: RunDriver) {
    options.tools.release(ids.runId);
    // Its lease ended with run.ended, in the same write.
    drop(ids, driver, true);
  }

  /**
   * The worker lost the run's lease (it expired, or another worker took the run over): the store
   * refused its append, or a renewal found it gone. Its actor stopped when the driver failed;
   * abort what it had in flight, and let its handle follow the run wherever it goes on.
   */
  function lose(ids: RunIds, driver: RunDriver) {
    live.get(ids.sessionId)?.controller.abort(new Error(`worker lost run ${ids.runId}'s lease`));
    options.tools.release(ids.runId);
    drop(ids, driver, true);
    handles.follow(ids);
  }

  /** A run waiting for a person holds no actor (and, with a worker, no lease): drop it; the log rebuilds it when needed. */
  function park(ids: RunIds, driver: RunDriver) {
    const { sessionId } = ids;
    // Serialized with decide()/steer()/stop(): one that already picked this live driver commits
    // before the actor is dropped, instead of finding it stopped (its fact lost or half-taken).
    const parked = () => {
      const snapshot = driver.snapshot();
      return snapshot?.status === 'active' && snapshot.hasTag('parked');
    };
    withSession(sessionId, async () => {
      // Moved on already (a decision or stop came first): nothing to wait for.
      if (!parked()) return;
      await driver.drained();
      if (!parked()) return;
      if (live.get(sessionId)?.driver !== driver) return;
      driver.release();
      drop(ids, driver);
      if (worker === undefined) return;
      handles.follow(ids);
      await worker.leases.release(ids.runId);
    }).catch((error) => {
      // Closed meanwhile: close() releases every live run itself. A release the store did not
      // take leaves the lease to expire: another worker's takeover then recovers the parked run.
      if (!locks.closed) worker?.onError(error);
    });
  }

  /** A request another worker posted for a run this worker drives: do it, then settle it. */
  function takeRequest(ids: RunIds, item: InboxItem) {
    // A request for an earlier run of the session: its sender learns the outcome from the log.
    if (worker === undefined || item.runId !== ids.runId) return;
    withSession(ids.sessionId, async () => {
      const running = live.get(ids.sessionId);
      const lease = worker.leases.held(item.runId);
      // Not driven here any more: the request stays pending for the run's next driver.
      if (running?.driver.runId !== item.runId || lease === undefined) return;
      let outcome: Parameters<SharedStore['settleInboxItem']>[0]['outcome'];
      try {
        await worker.perform(running.driver, item);
        outcome = { status: 'accepted' };
      } catch (error) {
        if (!isRefusal(error)) return worker.onError(error);
        outcome = { status: 'refused', error: { name: error.name, message: error.message } };
      }
      // A request that ended the run also ended its lease: the sender finds its fact in the log.
      const current = worker.leases.held(item.runId);
      if (current === undefined) return;
      await worker.store.settleInboxItem({ id: item.id, lease: current, outcome });
    }).catch((error) => {
      if (!locks.closed && !LeaseLostError.isInstance(error)) worker.onError(error);
    });
  }

  /** Takes the run's lease for this worker (no-op without a worker). */
  const claim =
    worker === undefined
      ? undefined
      : async (runId: string, sessionId: string): Promise<true | RunLeaseState> => {
          const lease = await worker.leases.acquire(sessionId, runId);
          return isGranted(lease) ? true : lease;
        };

  /** Reads and rebuilds the run under this worker's claim on it; a run that cannot go on gives the lease back. */
  async function load(
    sessionId: string,
    runId: string | undefined,
  ): Promise<LoadedRun | DamagedRun | DrivenElsewhere | undefined> {
    let claimed: string | undefined;
    const loaded = await loadRun<RunLeaseState>({
      store,
      machine,
      sessionId,
      runId,
      ...(claim === undefined
        ? {}
        : {
            claim: async (target: string) => {
              const result = await claim(target, sessionId);
              if (result === true) claimed = target;
              return result;
            },
          }),
    });
    if (claimed !== undefined && (loaded === undefined || 'damage' in loaded)) {
      // Ended meanwhile, or damaged: nobody drives it (a damaged run is never taken over).
      await worker?.leases.release(claimed);
    }
    return loaded;
  }

  /**
   * Resumes a loaded run with the recovery sequence (architecture/turn-machine.md,
   * Rehydration): started-but-unsettled calls marked indeterminate, then `run.recovered`,
   * whose transition starts what must run.
   */
  async function resumeRecovering(loaded: LoadedRun, handle: TurnHandle): Promise<RecoveredRun> {
    const { ids, facts, plan, rehydrated } = loaded;
    const { snapshot } = rehydrated;
    const driver = open(ids, facts, rehydrated.limits);
    await driver.resume(snapshot);
    if (snapshot.status !== 'done') {
      // One commit each, in order, as recoveryFacts lists them.
      for (const draft of recoveryFacts(plan)) await driver.commit(draft);
    }
    const status =
      snapshot.status === 'done'
        ? 'ended'
        : driver.snapshot()?.hasTag('parked')
          ? 'parked'
          : 'resumed';
    return {
      sessionId: ids.sessionId,
      runId: ids.runId,
      interruptedIn: plan.interruptedIn,
      indeterminate: recoveredCallIds(plan),
      status,
      turn: handle,
    };
  }

  return {
    newHandle,

    /** Starts a new run with its `run.started` (with a worker: under a lease taken first). */
    async start(ids: RunIds, facts: Fact[], draft: Parameters<RunDriver['begin']>[0]) {
      // Read (and pin) the run's tools first: a tools function that throws leaves nothing behind.
      options.tools.forRun(ids.runId);
      if (claim !== undefined) {
        const result = await claim(ids.runId, ids.sessionId);
        if (result !== true) throw new Error(`turnlog: new run ${ids.runId} is leased already`);
      }
      const lease = worker?.leases.held(ids.runId);
      const handle = newHandle(ids);
      const driver = open(ids, facts, draft.limits);
      try {
        await driver.begin(draft);
      } catch (error) {
        // Nothing of the run is in the log (another run.started won the session, or the store
        // refused): the runtime keeps nothing of it, and nobody is to take it over.
        handles.discard(ids.runId);
        options.tools.release(ids.runId);
        drop(ids, driver, true);
        if (lease !== undefined) await worker?.store.releaseLease({ lease }).catch(() => false);
        throw error;
      }
      return handle;
    },

    /**
     * The session's facts: the live run's copy, else the cached log of its ended run and the
     * store's facts since, else the store's. With a worker, never a live driver's copy: a driver
     * here may have lost its lease without knowing it yet (a pause), and its copy may lag what
     * the run's new driver appended.
     */
    async facts(sessionId: string): Promise<readonly Fact[]> {
      const running = worker === undefined ? live.get(sessionId) : undefined;
      return (
        running?.driver.facts() ??
        (await endedSessions.facts(store, sessionId)) ??
        (await store.read(sessionId))
      );
    },

    /**
     * With a worker: true while this worker still holds the lease its live driver of the
     * session's run works under, by the store; a driver found without it fails (as if a
     * renewal had found the lease lost). Checked before a refusal computed from the driver's
     * own copy of the log is believed. Always true without a worker.
     */
    async stillDriving(sessionId: string, driver: RunDriver): Promise<boolean> {
      const running = live.get(sessionId);
      if (worker === undefined) return true;
      if (running?.driver !== driver) return false;
      const lease = await worker.store.leaseOf({ sessionId, runId: driver.runId });
      const holds =
        lease?.live === true &&
        lease.workerId === worker.leases.workerId &&
        lease.epoch === running.epoch;
      if (!holds)
        driver.fail(lostLease({ sessionId, turnId: '', runId: driver.runId }, running.epoch));
      return holds;
    },

    has: (sessionId: string) => live.has(sessionId),

    /**
     * The session's unfinished run, live or rebuilt from the log (no actor restarted: I8).
     * Rebuilt, a parked run resumes as it was; any other was interrupted (its driver died) and
     * resumes with the recovery sequence, as `recover()` would. With a worker, rebuilding it
     * takes its lease; `elsewhere` when another worker drives it. Throws `DamagedSessionError`
     * when it cannot be resumed.
     */
    async active(sessionId: string): Promise<RunDriver | DrivenElsewhere | undefined> {
      const running = live.get(sessionId);
      if (running) return running.driver;
      const loaded = await load(sessionId, undefined);
      if (loaded === undefined || 'elsewhere' in loaded) return loaded;
      if ('damage' in loaded) {
        throw new DamagedSessionError({
          message: `Session ${sessionId} cannot be resumed: its log is damaged (${loaded.damage.join('; ')}). Nothing was written; read runtime.facts() to inspect it, and start a new session to go on.`,
          ...loaded,
        });
      }
      const { ids, facts, rehydrated } = loaded;
      if (worker !== undefined && !rehydrated.snapshot.hasTag('parked')) {
        await resumeRecovering(loaded, newHandle(ids, rehydrated.facts));
      } else {
        const driver = open(ids, facts, rehydrated.limits);
        await driver.resume(rehydrated.snapshot);
        // Parked when rebuilt: dropped again after the work that rebuilt it, unless that moved it on.
        if (rehydrated.snapshot.hasTag('parked')) park(ids, driver);
      }
      // A fold that reached terminal only lacked run.ended: resume appended it, nothing is open.
      return live.get(sessionId)?.driver;
    },

    /**
     * Rehydrates one unfinished run after a restart (architecture/turn-machine.md,
     * Rehydration) with the recovery sequence. A run that cannot be resumed is reported
     * `damaged` and left as it is; `undefined` when the run is no longer unfinished, or (with a
     * worker) when another worker drives it: its lease is live, so it is not this worker's to
     * touch.
     */
    async recover(sessionId: string, runId: string): Promise<RecoveredRun | undefined> {
      const running = live.get(sessionId);
      if (running?.driver.runId === runId) {
        const held = worker?.leases.held(runId);
        if (held === undefined || held.epoch === running.epoch) return undefined;
        // This worker took the run over from itself (its older lease lapsed before a renewal):
        // the driver of the older epoch is done; the run is recovered under the new one.
        running.driver.fail(lostLease({ sessionId, turnId: '', runId }, running.epoch));
        await running.driver.ended.catch(() => {});
      }
      try {
        const loaded = await load(sessionId, runId);
        if (loaded === undefined || 'elsewhere' in loaded) return undefined;
        if ('damage' in loaded) return { ...loaded, status: 'damaged', findings: [] };
        // Read (and pin) the run's tools first: a tools function that throws leaves nothing behind.
        options.tools.forRun(runId);
        return await resumeRecovering(loaded, newHandle(loaded.ids, loaded.rehydrated.facts));
      } catch (error) {
        // Lost the run while recovering it (a pause past the lease): another worker goes on.
        if (worker !== undefined && LeaseLostError.isInstance(error)) return undefined;
        throw error;
      }
    },

    /**
     * A lease this worker held was found lost by a renewal: the run's driver fails with
     * `LeaseLostError` (its actor stops, nothing more of it is appended) and its handle follows
     * the run through the store.
     */
    lost(sessionId: string, runId: string, epoch: number) {
      const running = live.get(sessionId);
      if (running?.driver.runId === runId && running.epoch === epoch) {
        running.driver.fail(lostLease({ sessionId, turnId: '', runId }, epoch));
      }
    },

    /** Serializes work on one session: the runtime's public operations and parking. */
    withSession,

    /** True once `close()` was called. */
    get closed() {
      return locks.closed;
    },

    /**
     * Refuses new work, waits for the work queued on each session, then detaches every live run
     * (they stay unfinished in the log) and fails the open handles with `closedError`. With a
     * worker, its live runs' leases are handed over: another worker takes them over at its next scan.
     */
    async close(closedError: Error) {
      await locks.close();
      for (const run of live.values()) {
        run.driver.release();
        run.controller.abort(closedError);
      }
      await Promise.all([...live.values()].map((run) => run.driver.drained()));
      for (const unsubscribe of inboxes.values()) unsubscribe();
      inboxes.clear();
      await worker?.leases.close();
      live.clear();
      runServices.clear();
      handles.close(closedError);
    },
  };
}

/** A runtime's live runs (`createLiveRuns`). */
export type LiveRuns = ReturnType<typeof createLiveRuns>;
