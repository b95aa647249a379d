import type { InspectionEvent, Observer } from 'xstate';
import type { ModelAdapter } from '../../adapters/model-adapter.ts';
import type { Fact, RunLimits } from '../../events/facts.ts';
import type { IdGenerator } from '../../events/ids.ts';
import { DamagedSessionError } from '../../runtime-errors.ts';
import type { EventStore, StoreFinding } from '../../store/event-store.ts';
import type { ToolSetSource } from '../../tools/tool-set-source.ts';
import { recoveredCallIds, recoveryFacts } from '../pure/resume-run.ts';
import type { TurnMachine } from '../pure/turn-machine.ts';
import { loadRun } from './load-run.ts';
import { provideRunEffects, type RunLifecycle } from './run-actors.ts';
import { createRunDriver, type RunDriver } from './run-driver.ts';
import type { RunServices } from './run-services.ts';
import { createSessionCache } from './session-cache.ts';
import { createSessionLocks } from './session-locks.ts';
import {
  createTurnChannel,
  type TurnEvent,
  type TurnHandle,
  type TurnSink,
  turnResult,
} from './turn-channel.ts';

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

interface RunIds {
  sessionId: string;
  turnId: string;
  runId: string;
}

interface LiveRun {
  driver: RunDriver;
  controller: AbortController;
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
}

/**
 * The runtime's session registry: the per-session lock, and the live runs, at most one per
 * session, each a run driver with its live actor and the services its actors use. A run whose
 * state is tagged `parked` is dropped and rebuilt from the log when something arrives for it;
 * the runtime then keeps only the `done` resolvers of its handle.
 */
export function createLiveRuns(options: LiveRunsOptions) {
  const { store, generateId } = options;
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
  // Per unfinished run: the `done` resolvers and a weak reference to the caller's event buffer.
  const sinks = new Map<string, TurnSink>();
  // Sessions whose last run ended: their log and history, for the session's next run.
  const ended = createSessionCache();

  /** A new handle for a run; the runtime keeps only its sink. */
  function newHandle(ids: RunIds, seen: readonly TurnEvent[] = []): TurnHandle {
    const { handle, sink } = createTurnChannel(ids, seen);
    sinks.set(ids.runId, sink);
    return handle;
  }

  /** The sink of a run's handle; a run rebuilt without one (its caller went away) gets one nobody reads. */
  function sinkFor(ids: RunIds): TurnSink {
    const existing = sinks.get(ids.runId);
    if (existing) return existing;
    newHandle(ids);
    return sinks.get(ids.runId) as TurnSink;
  }

  /** Wires one run's driver, services and live actor. */
  function open(ids: RunIds, facts: Fact[], limits: RunLimits): RunDriver {
    const controller = new AbortController();
    const sink = sinkFor(ids);
    let driver!: RunDriver;
    const history = ended.history(ids.sessionId);
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
    driver = createRunDriver({
      store,
      machine,
      ...ids,
      facts,
      now: options.now,
      generateId,
      ...(options.inspect ? { inspect: options.inspect } : {}),
      onFact: (fact, reached) => {
        sink.push(fact);
        if (reached.hasTag('parked')) park(ids.sessionId, driver);
      },
    });
    driver.ended.then(
      () => {
        sink.end(turnResult(driver.facts(), ids.runId));
        ended.keep(ids.sessionId, driver.facts(), history);
        forget(ids, driver);
      },
      (error) => {
        ended.drop(ids.sessionId);
        sink.fail(error);
        forget(ids, driver);
      },
    );
    live.set(ids.sessionId, { driver, controller });
    return driver;
  }

  /** The run is over (or its driver failed): the runtime keeps nothing of it. */
  function forget(ids: RunIds, driver: RunDriver) {
    sinks.delete(ids.runId);
    options.tools.release(ids.runId);
    if (live.get(ids.sessionId)?.driver !== driver) return;
    live.delete(ids.sessionId);
    runServices.delete(ids.runId);
  }

  /** A run waiting for a person holds no actor: drop it; the log rebuilds it when needed. */
  function park(sessionId: string, driver: RunDriver) {
    // Serialized with decide()/steer()/stop(): one that already picked this live driver commits
    // before the actor is dropped, instead of finding it stopped (its fact lost or half-taken).
    withSession(sessionId, async () => {
      await driver.drained();
      const snapshot = driver.snapshot();
      if (snapshot?.status !== 'active' || !snapshot.hasTag('parked')) return;
      if (live.get(sessionId)?.driver !== driver) return;
      driver.release();
      live.delete(sessionId);
      runServices.delete(driver.runId);
    }).catch(() => {
      // Closed meanwhile: close() releases every live run itself.
    });
  }

  return {
    newHandle,

    /** Starts a new run with its `run.started`. */
    async start(ids: RunIds, facts: Fact[], draft: Parameters<RunDriver['begin']>[0]) {
      // Read (and pin) the run's tools first: a tools function that throws leaves nothing behind.
      options.tools.forRun(ids.runId);
      const handle = newHandle(ids);
      await open(ids, facts, draft.limits).begin(draft);
      return handle;
    },

    /** The session's facts: the live run's copy, else the cached log and the store's since, else the store's. */
    async facts(sessionId: string): Promise<readonly Fact[]> {
      return (
        live.get(sessionId)?.driver.facts() ??
        (await ended.facts(store, sessionId)) ??
        (await store.read(sessionId))
      );
    },

    has: (sessionId: string) => live.has(sessionId),

    /**
     * The session's unfinished run, live or rebuilt from the log (no actor restarted: I8).
     * Throws `DamagedSessionError` when it cannot be resumed.
     */
    async active(sessionId: string): Promise<RunDriver | undefined> {
      const running = live.get(sessionId);
      if (running) return running.driver;
      const loaded = await loadRun({ store, machine, sessionId, runId: undefined });
      if (loaded === undefined) return undefined;
      if ('damage' in loaded) {
        throw new DamagedSessionError({
          message: `Session ${sessionId} cannot be resumed: its log is damaged (${loaded.damage.join('; ')}). Nothing was written; read runtime.facts() to inspect it, and start a new session to go on.`,
          ...loaded,
        });
      }
      const { ids, facts, rehydrated } = loaded;
      await open(ids, facts, rehydrated.limits).resume(rehydrated.snapshot);
      // A fold that reached terminal only lacked run.ended: resume appended it, nothing is open.
      return live.get(sessionId)?.driver;
    },

    /**
     * Rehydrates one unfinished run after a restart (architecture/turn-machine.md,
     * Rehydration): commits the recovery sequence (`recoveryFacts`: started-but-unsettled calls
     * marked indeterminate, then `run.recovered`, whose transition starts what must run).
     * A run that cannot be resumed is reported `damaged` and left as it is; `undefined` when the
     * run is no longer unfinished.
     */
    async recover(sessionId: string, runId: string): Promise<RecoveredRun | undefined> {
      const loaded = await loadRun({ store, machine, sessionId, runId });
      if (loaded === undefined) return undefined;
      if ('damage' in loaded) return { ...loaded, status: 'damaged', findings: [] };
      const { ids, facts, plan, rehydrated } = loaded;
      const { snapshot } = rehydrated;
      // Read (and pin) the run's tools first: a tools function that throws leaves nothing behind.
      options.tools.forRun(runId);
      const handle = newHandle(ids, rehydrated.facts);
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
        sessionId,
        runId,
        interruptedIn: plan.interruptedIn,
        indeterminate: recoveredCallIds(plan),
        status,
        turn: handle,
      };
    },

    /** Serializes work on one session: the runtime's public operations and parking. */
    withSession,

    /** True once `close()` was called. */
    get closed() {
      return locks.closed;
    },

    /**
     * Refuses new work, waits for the work queued on each session, then detaches every live run
     * (they stay unfinished in the log) and fails the open handles with `closedError`.
     */
    async close(closedError: Error) {
      await locks.close();
      for (const run of live.values()) {
        run.driver.release();
        run.controller.abort(closedError);
      }
      await Promise.all([...live.values()].map((run) => run.driver.drained()));
      live.clear();
      runServices.clear();
      for (const sink of sinks.values()) sink.fail(closedError);
      sinks.clear();
    },
  };
}
