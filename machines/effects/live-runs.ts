import type { InspectionEvent, Observer } from 'xstate';
import type { ModelAdapter } from '../../adapters/model-adapter.ts';
import type { Fact, RunLimits, RunSettings } from '../../events/facts.ts';
import type { IdGenerator } from '../../events/ids.ts';
import type { HistoryProjection } from '../../events/project-history.ts';
import { fingerprintToRecord } from '../../events/run-fingerprint.ts';
import type { RunSegment, SegmentEnd, SegmentStart } from '../../observability/run-segment.ts';
import type { RunTelemetry } from '../../observability/run-telemetry.ts';
import { DamagedSessionError } from '../../runtime-errors.ts';
import type { EventStore, OpenRun, StoreFinding } from '../../store/event-store.ts';
import type { ToolSetSource } from '../../tools/tool-set-source.ts';
import {
  type LoadedRun,
  recoveredCallIds,
  recoveryFacts,
  unfinishedRun,
} from '../pure/resume-run.ts';
import type { TurnMachine } from '../pure/turn-machine.ts';
import { provideRunEffects } from './run-actors.ts';
import { RunDriver } from './run-driver.ts';
import { RunHandles, type RunIds, type RunSinks } from './run-handles.ts';
import type { RunServices } from './run-services.ts';
import type { DrivenElsewhere, RunTenure, TenureHost } from './run-tenure.ts';
import { SessionCache } from './session-cache.ts';
import { SessionLocks } from './session-locks.ts';
import { SingleProcessTenure } from './single-process-tenure.ts';
import { type TurnHandle, turnResult } from './turn-channel.ts';

/** What `recover()` found for one unfinished run (or one session it could not read). */
export type RecoveredRun =
  | {
      sessionId: string;
      runId: string;
      /** The state the run was in when its process stopped. */
      interruptedIn: string | undefined;
      /** Calls that started and never settled: they may have run, and are never run again (I8). */
      indeterminate: string[];
      /**
       * `resumed`: running again (checking calls that may have run with their tools included:
       * one whose tool cannot tell parks it later); `parked`: waiting for `decide()`; `ended`:
       * only `run.ended` was missing.
       */
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

/** What a runtime's live runs are built from: its parts, and how it holds runs. */
/** What a run's `run.started` records of its requests: its limits and settings. */
interface RunRequestSettings {
  limits: RunLimits;
  settings?: RunSettings | undefined;
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
  /**
   * How this runtime holds its runs (default: a store for one process's, `SingleProcessTenure`);
   * a worker's (`WorkerTenure`) on a store several workers share.
   */
  tenure?: RunTenure;
  /** Traces and metrics (observability/): each driver gets a segment fed its durable facts. */
  telemetry?: RunTelemetry | undefined;
}

/** A run driven here: its driver, the controller whose signal its actors get (I10), its telemetry. */
class LiveRun {
  readonly driver: RunDriver;
  readonly controller = new AbortController();
  readonly segment: RunSegment | undefined;

  constructor(driver: RunDriver, segment: RunSegment | undefined) {
    this.driver = driver;
    this.segment = segment;
  }
}

/**
 * The runtime's session registry: the per-session lock, and the live runs, at most one per
 * session, each a run driver with its live actor and the services its actors use. A run whose
 * state is tagged `parked` is dropped and rebuilt from the log when something arrives for it;
 * the runtime then keeps only the `done` resolvers of its handle.
 *
 * Where a run may be driven is the tenure's part (`RunTenure`): on a store for one process,
 * every run is driven here; a worker drives a run only under its lease, takes the requests other
 * workers post to the run's inbox while it drives it, and lets the handle of a run it does not
 * drive (parked, lost, taken over) follow the run through the store until it ends.
 *
 * Work on one session runs one piece at a time, in the order it is queued on the session's lock
 * (`withSession`); how parking and a worker's inbox requests take their turns is told at `park`.
 */
export class LiveRuns implements TenureHost {
  /** The sinks of the unfinished runs' handles. */
  readonly handles = new RunHandles((ids, sinks) => this.#unread(ids, sinks));
  readonly #options: LiveRunsOptions;
  readonly #store: EventStore;
  readonly #tenure: RunTenure;
  readonly #locks: SessionLocks;
  /** The turn machine with its effects provided once: each actor finds its run's services by runId. */
  readonly #machine: TurnMachine;
  // Per session: its run driven here.
  readonly #live = new Map<string, LiveRun>();
  // Per run driven here: the services its actors use.
  readonly #services = new Map<string, RunServices>();
  // Sessions whose last run ended: their log and history, for the session's next run.
  readonly #endedSessions = new SessionCache();

  /**
   * Serializes work on one session: the runtime's public operations, parking and inbox
   * requests (a function of its own: callers pass it on).
   */
  readonly withSession = <T>(sessionId: string, work: () => Promise<T>): Promise<T> =>
    this.#locks.withSession(sessionId, work);

  constructor(options: LiveRunsOptions) {
    this.#options = options;
    this.#store = options.store;
    this.#tenure = options.tenure ?? new SingleProcessTenure(options.store);
    this.#locks = new SessionLocks(options.closedError);
    this.#machine = provideRunEffects(
      (runId) => this.#servicesOf(runId),
      { abort: (ids, reason) => this.#abort(ids, reason) },
      options.machine,
    );
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.#locks.closed;
  }

  /**
   * The unfinished runs `recover()` resumes: all of them on a store for one process; with a
   * worker, those nobody drives and no worker parked (`RunTenure.runsToRecover`).
   */
  runsToRecover(): Promise<OpenRun[]> {
    return this.#tenure.runsToRecover();
  }

  /** True while the session's run is driven here. */
  has(sessionId: string): boolean {
    return this.#live.has(sessionId);
  }

  /** The live driver of the session's run, when the run is driven here. */
  driverOf(sessionId: string): RunDriver | undefined {
    return this.#live.get(sessionId)?.driver;
  }

  /**
   * Starts a new run with its `run.started` (with a worker: under a lease taken first), which
   * records what the run is started with (its fingerprint) and, traced, its first span's context;
   * `parent`: the caller's context, that span's parent.
   */
  async start(
    ids: RunIds,
    facts: Fact[],
    draft: Parameters<RunDriver['begin']>[0],
    parent?: unknown,
  ): Promise<TurnHandle> {
    // Read (and pin) the run's tools first: a tools function that throws leaves nothing behind.
    const tools = this.#options.tools.forRun(ids.runId);
    await this.#tenure.claim(ids);
    const handle = this.handles.newHandle(ids);
    const driver = this.#open(ids, facts, draft, 'started', parent);
    const trace = this.#live.get(ids.sessionId)?.segment?.traceContext;
    const { provider, modelId } = this.#options.adapter;
    const fingerprint = fingerprintToRecord({
      tools: tools.fingerprint,
      provider,
      modelId,
      system: draft.system,
    });
    try {
      await driver.begin({ ...draft, fingerprint, ...(trace && { trace }) });
    } catch (error) {
      // Nothing of the run is in the log (another run.started won the session, or the store
      // refused): the runtime keeps nothing of it, and nobody is to take it over.
      this.handles.discard(ids.runId);
      this.#options.tools.release(ids.runId);
      this.#drop(ids, driver, 'unstarted', error);
      await this.#tenure.leave(ids, driver, 'unstarted');
      throw error;
    }
    return handle;
  }

  /**
   * The session's facts: the live run's copy, else the cached log of its ended run and the
   * store's facts since, else the store's. With a worker, never a live driver's copy: a driver
   * here may have lost its lease without knowing it yet (a pause), and its copy may lag what
   * the run's new driver appended.
   */
  async facts(sessionId: string): Promise<readonly Fact[]> {
    const running = this.#tenure.shared ? undefined : this.#live.get(sessionId);
    return (
      running?.driver.facts() ??
      (await this.#endedSessions.facts(this.#store, sessionId)) ??
      (await this.#store.read(sessionId))
    );
  }

  /**
   * The session's unfinished run, live or rebuilt from the log (no actor restarted: I8).
   * Rebuilt, a parked run resumes as it was; any other was interrupted (the process or worker
   * driving it died, or a closed runtime detached it) and resumes with the recovery sequence, as
   * `recover()` would — also in one process before `recover()` was called; with a worker,
   * rebuilding it takes its lease, and `elsewhere` when another worker drives it. Throws
   * `DamagedSessionError` when it cannot be resumed.
   */
  async active(sessionId: string): Promise<RunDriver | DrivenElsewhere | undefined> {
    const running = this.#live.get(sessionId);
    if (running) return running.driver;
    const loaded = await this.#tenure.load({ machine: this.#machine, sessionId, runId: undefined });
    if (loaded === undefined || 'elsewhere' in loaded) return loaded;
    if ('damage' in loaded) {
      throw new DamagedSessionError({
        message: `Session ${sessionId} cannot be resumed: its log is damaged (${loaded.damage.join('; ')}). Nothing was written; read runtime.facts() to inspect it, and start a new session to go on.`,
        ...loaded,
      });
    }
    await this.#rebuild(loaded);
    // A fold that reached terminal only lacked run.ended: resume appended it, nothing is open.
    return this.#live.get(sessionId)?.driver;
  }

  /**
   * A new handle of the session's unfinished run (`undefined` when it has none): the run's facts
   * so far, then live. A run driven here feeds it as any handle (deltas included); a parked one
   * feeds it once something rebuilds it; with a worker, a run driven elsewhere (or by nobody) is
   * followed through the store until it ends. Called under the session's lock, so the run is not
   * started, rebuilt or dropped meanwhile; a live driver appends only synchronously to its handles.
   * When `signal` aborts, the handle is let go (`RunHandles.letGo`): nothing of it is kept.
   */
  async follow(sessionId: string, signal?: AbortSignal): Promise<TurnHandle | undefined> {
    const live = this.#live.get(sessionId)?.driver;
    if (live !== undefined) {
      const ids = { sessionId, turnId: live.turnId, runId: live.runId };
      return this.handles.newHandle(
        ids,
        live.facts().filter((fact) => fact.runId === ids.runId),
        signal,
      );
    }
    const facts = await this.facts(sessionId);
    const ids = unfinishedRun(facts);
    if (ids === undefined) return undefined;
    const handle = this.handles.newHandle(
      ids,
      facts.filter((fact) => fact.runId === ids.runId),
      signal,
    );
    // Let go already (an aborted signal): nothing to follow.
    if (signal?.aborted !== true) this.#tenure.follow(ids);
    return handle;
  }

  /**
   * Every handle of the run was let go: a run driven here keeps its sinks (its driver feeds
   * them, now nobody); any other is forgotten, and no longer followed through the store.
   */
  #unread(ids: RunIds, sinks: RunSinks): void {
    if (this.#live.get(ids.sessionId)?.driver.runId === ids.runId) return;
    this.handles.discard(ids.runId, sinks);
    this.#tenure.unfollow(ids);
  }

  /**
   * Rehydrates one unfinished run after a restart (architecture/turn-machine.md,
   * Rehydration) with the recovery sequence. A run that cannot be resumed is reported
   * `damaged` and left as it is; `undefined` when the run is no longer unfinished, or (with a
   * worker) when another worker drives it: its lease is live, so it is not this worker's to
   * touch.
   */
  async recover(sessionId: string, runId: string): Promise<RecoveredRun | undefined> {
    const running = this.#live.get(sessionId);
    if (running?.driver.runId === runId) {
      // Driven here already; unless this worker took the run over from itself (its older lease
      // lapsed before a renewal): the driver of the older epoch is done, and the run is
      // recovered under the new one.
      if (!this.#tenure.supersede(running.driver)) return undefined;
      await running.driver.ended.catch(() => {});
    }
    try {
      const loaded = await this.#tenure.load({ machine: this.#machine, sessionId, runId });
      if (loaded === undefined || 'elsewhere' in loaded) return undefined;
      if ('damage' in loaded) return { ...loaded, status: 'damaged', findings: [] };
      // Read (and pin) the run's tools first: a tools function that throws leaves nothing behind.
      this.#options.tools.forRun(runId);
      const handle = this.handles.newHandle(loaded.ids, loaded.rehydrated.facts);
      return await this.#resumeRecovering(loaded, handle);
    } catch (error) {
      // Lost the run while recovering it (a pause past the lease): another worker goes on.
      if (this.#tenure.isLost(error)) return undefined;
      throw error;
    }
  }

  /**
   * Refuses new work, waits for the work queued on each session, then detaches every live run
   * (they stay unfinished in the log) and fails the open handles with `closedError`. With a
   * worker, its live runs' leases are handed over: another worker takes them over at its next scan.
   */
  async close(closedError: Error): Promise<void> {
    await this.#locks.close();
    for (const run of this.#live.values()) {
      run.driver.release();
      run.controller.abort(closedError);
      run.segment?.end('detached', false);
    }
    await Promise.all([...this.#live.values()].map((run) => run.driver.drained()));
    await this.#tenure.close();
    this.#live.clear();
    this.#services.clear();
    this.handles.close(closedError);
  }

  /**
   * Wires one run's driver, services, live actor and telemetry (`start`: how it came here;
   * `started`: what its `run.started` records of its requests).
   */
  #open(
    ids: RunIds,
    facts: Fact[],
    started: RunRequestSettings,
    start: SegmentStart,
    parent?: unknown,
  ): RunDriver {
    const { now, generateId, inspect, telemetry } = this.#options;
    // With a worker, the lease this driver works under: its epoch is fixed for the driver's
    // life, so a driver that lost the run never stamps a later epoch (this worker may take the
    // run again).
    const token = this.#tenure.token(ids);
    const sinks = this.handles.drivenHere(ids);
    const history = this.#endedSessions.history(ids.sessionId);
    const segment = telemetry?.segment({
      ids,
      token,
      start,
      facts,
      parent,
      secretsOf: this.#options.tools.forRun(ids.runId).secretsOf,
    });
    const driver: RunDriver = new RunDriver({
      store: telemetry?.appendsTo(this.#store) ?? this.#store,
      machine: this.#machine,
      ...ids,
      facts,
      now,
      generateId,
      ...(inspect ? { inspect } : {}),
      token,
      onFact: (fact, reached) => {
        sinks.push(fact);
        segment?.fact(fact, reached);
        if (reached.hasTag('parked')) this.#park(ids, driver);
      },
    });
    const run = new LiveRun(driver, segment);
    this.#services.set(ids.runId, this.#runServices(run, sinks, history, started));
    driver.ended.then(
      () => this.#ended(ids, driver, history),
      (error) => this.#failed(ids, driver, error),
    );
    this.#live.set(ids.sessionId, run);
    this.#tenure.drive(ids, driver);
    return driver;
  }

  /** What the run's actors use: the adapter, its tools, the log, and its driver's commit. */
  #runServices(
    { driver, controller }: LiveRun,
    sinks: RunSinks,
    history: HistoryProjection,
    { limits, settings }: RunRequestSettings,
  ): RunServices {
    const { store, generateId, random } = this.#options;
    return {
      adapter: this.#options.adapter,
      ...this.#options.tools.forRun(driver.runId),
      system: this.#options.system,
      limits,
      settings,
      store,
      facts: () => driver.facts(),
      history,
      commit: (draft, prepared) => driver.commit(draft, prepared),
      commitAll: (drafts) => driver.commitAll(drafts),
      signal: controller.signal,
      generateId,
      random,
      emit: (event) => sinks.push(event),
      onError: (error) => driver.fail(error),
    };
  }

  #servicesOf(runId: string): RunServices {
    const services = this.#services.get(runId);
    if (services === undefined)
      throw new Error(`turnlog: no live run ${runId} (an actor outlived its run)`);
    return services;
  }

  /** I10: a stop is durable: abort the run's request and its tools' signal. */
  #abort({ sessionId, runId }: { sessionId: string; runId: string }, reason: string): void {
    const run = this.#live.get(sessionId);
    if (run?.driver.runId === runId) run.controller.abort(new Error(reason));
  }

  /** The run ended: its handles get its result, its session's log and history are kept. */
  #ended(ids: RunIds, driver: RunDriver, history: HistoryProjection): void {
    this.handles.end(ids.runId, turnResult(driver.facts(), ids.runId));
    this.#endedSessions.keep(ids.sessionId, driver.facts(), history);
    this.#forget(ids, driver, 'ended');
  }

  /** The driver failed: its lease was lost (a worker's), or the log could not be written. */
  #failed(ids: RunIds, driver: RunDriver, error: unknown): void {
    this.#endedSessions.drop(ids.sessionId);
    if (this.#tenure.isLost(error)) {
      this.#lose(ids, driver);
      return;
    }
    this.handles.fail(ids.runId, error);
    this.#forget(ids, driver, 'failed', error);
  }

  /** The run is over (or its driver failed): the runtime keeps nothing of it (its handles were told). */
  #forget(ids: RunIds, driver: RunDriver, reason: 'ended' | 'failed', error?: unknown): void {
    this.#options.tools.release(ids.runId);
    this.#drop(ids, driver, reason, error);
    // Its lease ended with run.ended, in the same write.
    void this.#tenure.leave(ids, driver, 'ended');
  }

  /**
   * The worker lost the run's lease (it expired, or another worker took the run over): the store
   * refused its append, or a renewal found it gone. Its actor stopped when the driver failed;
   * abort what it had in flight, and let its handle follow the run wherever it goes on.
   */
  #lose(ids: RunIds, driver: RunDriver): void {
    this.#live
      .get(ids.sessionId)
      ?.controller.abort(new Error(`worker lost run ${ids.runId}'s lease`));
    this.#options.tools.release(ids.runId);
    this.#drop(ids, driver, 'lost');
    void this.#tenure.leave(ids, driver, 'lost');
  }

  /** The run is no longer driven here (`reason`): its live actor's services go (its handles stay). */
  #drop(ids: RunIds, driver: RunDriver, reason: SegmentEnd, error?: unknown): void {
    const run = this.#live.get(ids.sessionId);
    if (run?.driver !== driver) return;
    run.segment?.end(reason, this.#options.telemetry?.keepsParked ?? false, error);
    this.#live.delete(ids.sessionId);
    this.#services.delete(ids.runId);
  }

  /**
   * A run waiting for a person holds no actor (and, with a worker, no lease): queued on the
   * session's lock behind the work under way, it is dropped (`dropParked`); the log rebuilds it
   * when needed.
   *
   * The order of work on the session, each piece queued on its lock when it arrives:
   * 1. the work under way: a public operation (`send`, `decide`, `steer`, `stop`), a takeover's
   *    `recover`, or a worker's inbox request; the fact that parks the run queues (2);
   * 2. the parking: once the driver's commits are drained, a run still parked first does the
   *    requests pending in its inbox (the tenure's `takeUp`; with a worker, read from the store
   *    now, not waited for from the subscription); a run still parked after them is released,
   *    its services dropped (`drop`), then the tenure's `leave('parked')`: a worker ends the
   *    run's inbox subscription, lets its handles follow it, and releases its lease;
   * 3. with a worker, an inbox request delivered after (2) finds the run driven here no more and
   *    stays pending (`InboxTaker`); it was either done in (2) (its fact is logged) or posted
   *    after (2) read the inbox, and then its sender, finding nobody driving the run at its next
   *    tick, takes the run, whose parking does it in (2). Before, a run rebuilt while parked
   *    queued (2) ahead of its new subscription's first delivery and was dropped with the
   *    request undone, again at every tick (issue 26, defect 1).
   */
  #park(ids: RunIds, driver: RunDriver): void {
    // Serialized with decide()/steer()/stop(): one that already picked this live driver commits
    // before the actor is dropped, instead of finding it stopped (its fact lost or half-taken).
    this.#locks
      .withSession(ids.sessionId, () => this.#dropParked(ids, driver))
      .catch((error) => {
        // Closed meanwhile: close() releases every live run itself. A release the store did not
        // take leaves the lease to expire: another worker's takeover then recovers the parked run.
        if (!this.#locks.closed) this.#tenure.warn(error);
      });
  }

  /**
   * Drops a run still parked once its commits are drained (the work of `park`, under the lock),
   * unless a request waits in its inbox: that is done first (`takeUp`), and the run dropped only
   * if it is still parked after (a few rounds at most: a request that cannot be done stays
   * pending for the next driver, which its sender brings at its next tick).
   */
  async #dropParked(ids: RunIds, driver: RunDriver): Promise<void> {
    for (let round = 0; round < maxTakeUpRounds; round += 1) {
      // Moved on already (a decision or stop came first): nothing to wait for.
      if (!isParked(driver)) return;
      await driver.drained();
      if (!isParked(driver)) return;
      if (this.#live.get(ids.sessionId)?.driver !== driver) return;
      if (!(await this.#tenure.takeUp(ids, driver))) break;
    }
    if (!isParked(driver) || this.#live.get(ids.sessionId)?.driver !== driver) return;
    driver.release();
    this.#drop(ids, driver, 'parked');
    await this.#tenure.leave(ids, driver, 'parked');
  }

  /** Drives a run rebuilt from the log for work that arrived for it. */
  async #rebuild(loaded: LoadedRun): Promise<void> {
    const { ids, facts, rehydrated } = loaded;
    // Not live here and not parked: the process or driver that ran it died (or a runtime closed
    // and detached it). In one process as with workers, whatever comes first — recover(), or a
    // steer, stop or decide before it — resumes it with the recovery sequence (I8).
    if (!rehydrated.snapshot.hasTag('parked')) {
      await this.#resumeRecovering(loaded, this.handles.newHandle(ids, rehydrated.facts));
      return;
    }
    const driver = this.#open(ids, facts, rehydrated, 'resumed');
    await driver.resume(rehydrated.snapshot);
    // Parked when rebuilt: dropped again after the work that rebuilt it, unless that moved it on.
    if (rehydrated.snapshot.hasTag('parked')) this.#park(ids, driver);
  }

  /**
   * Resumes a loaded run with the recovery sequence (architecture/turn-machine.md,
   * Rehydration): started-but-unsettled calls marked indeterminate, then `run.recovered`,
   * whose transition starts what must run.
   */
  async #resumeRecovering(loaded: LoadedRun, handle: TurnHandle): Promise<RecoveredRun> {
    const { ids, facts, plan, rehydrated } = loaded;
    const { snapshot } = rehydrated;
    const driver = this.#open(ids, facts, rehydrated, 'recovered');
    await driver.resume(snapshot);
    if (snapshot.status !== 'done') {
      // Traced, run.recovered records this driver's span: the run's later spans link to it.
      const trace = this.#live.get(ids.sessionId)?.segment?.traceContext;
      // One commit each, in order, as recoveryFacts lists them; a call whose tool can check it
      // (reconcile, idempotent) is checked before anyone is asked.
      const { callSettler } = this.#options.tools.forRun(ids.runId);
      for (const draft of recoveryFacts(plan, (name) => callSettler.checkOf(name))) {
        await driver.commit(draft.type === 'run.recovered' && trace ? { ...draft, trace } : draft);
      }
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
}

/** How many times a parked run's pending requests are taken up before it is dropped anyway. */
const maxTakeUpRounds = 4;

/** True while the driver's live actor waits for a person. */
function isParked(driver: RunDriver): boolean {
  const snapshot = driver.snapshot();
  return snapshot?.status === 'active' && snapshot.hasTag('parked');
}
