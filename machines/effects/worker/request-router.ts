import type { Fact } from '../../../events/facts.ts';
import type { IdGenerator } from '../../../events/ids.ts';
import type { JsonObject } from '../../../events/json.ts';
import { NoActiveRunError } from '../../../runtime-errors.ts';
import { ConcurrencyError } from '../../../store/event-store.ts';
import type { InboxOutcome } from '../../../store/run-inbox.ts';
import { LeaseLostError, RunLeasedError, type RunLeaseState } from '../../../store/run-leases.ts';
import { validateDecision } from '../../../tools/permission-policy.ts';
import type { RunDriver } from '../run-driver.ts';
import {
  isRefusal,
  noActiveRun,
  performRequest,
  type RunRequest,
  refusalError,
} from '../run-requests.ts';
import type { TenureHost } from '../run-tenure.ts';
import { lostLease, type SharedStore } from './worker-leases.ts';

/** What a worker's request router is built from (`new RequestRouter`). */
export interface RequestRouterOptions {
  store: SharedStore;
  workerId: string;
  leaseMs: number;
  /** Ids unique across workers (the worker's id, then a generated id): request ids, fact ids. */
  generateId: IdGenerator;
  /** The live runs, read when a request comes (they are built after this worker). */
  runs: () => TenureHost;
  /** Raised when the runtime closes: a request still waiting ends with it. */
  closed: AbortSignal;
}

/** A request posted to a run's inbox, waited for by its sender. */
interface PostedRequest {
  id: string;
  sessionId: string;
  runId: string;
  request: RunRequest;
}

/** How many times a request is routed again after a race before its error is thrown. */
const maxRoutes = 20;

/**
 * Routes a request to the session's unfinished run wherever it is (architecture/workers.md,
 * "The runtime side"): done here when this worker drives the run or can take it (parked,
 * released, expired); posted to the run's inbox and awaited when another worker drives it. A
 * race with a takeover, a `recover()` or another request routes it again: the caller sees the
 * request's own outcome, never a stray `ConcurrencyError` or `LeaseLostError`.
 */
export class RequestRouter {
  readonly #options: RequestRouterOptions;
  readonly #store: SharedStore;

  constructor(options: RequestRouterOptions) {
    this.#options = options;
    this.#store = options.store;
  }

  /** Does the request on the session's unfinished run, here or on the worker that drives it. */
  async route(sessionId: string, request: RunRequest): Promise<void> {
    const runs = this.#options.runs();
    for (let attempt = 1; ; attempt += 1) {
      try {
        const elsewhere = await runs.withSession(sessionId, () =>
          this.#performHere(sessionId, request),
        );
        if (elsewhere === undefined) return;
        return await this.#viaInbox(sessionId, elsewhere.runId, request);
      } catch (error) {
        if (attempt >= maxRoutes || !isRace(error)) throw error;
        await delay(Math.min(this.#options.leaseMs / 4, 10 * attempt), this.#options.closed);
      }
    }
  }

  /**
   * Under the session's lock: does the request on the run driven here (taken over when nobody
   * drives it), or says where another worker drives it.
   */
  async #performHere(sessionId: string, request: RunRequest): Promise<RunLeaseState | undefined> {
    const target = await this.#options.runs().active(sessionId);
    if (target === undefined) throw noActiveRun(sessionId, request.kind);
    if ('elsewhere' in target) return target.elsewhere;
    try {
      await performRequest(target, request, { sessionId, generateId: this.#options.generateId });
    } catch (error) {
      // A refusal from this driver's copy of the log counts only while the driver still
      // holds the run: a paused worker's copy may lag (the decision was made elsewhere).
      if (isRefusal(error) && !(await this.#stillDriving(sessionId, target))) {
        throw new LeaseLostError({
          message: `runtime.${request.kind}(): this worker's driver of run ${target.runId} lost its lease`,
          sessionId,
          runId: target.runId,
          workerId: this.#options.workerId,
          epoch: 0,
          current: undefined,
        });
      }
      throw error;
    }
    return undefined;
  }

  /**
   * True while this worker still holds the lease its live driver of the session's run works
   * under, by the store; a driver found without it fails (as if a renewal had found the lease
   * lost). Checked before a refusal computed from the driver's own copy of the log is believed.
   */
  async #stillDriving(sessionId: string, driver: RunDriver): Promise<boolean> {
    if (this.#options.runs().driverOf(sessionId) !== driver) return false;
    const { workerId } = this.#options;
    const epoch = driver.token?.leaseEpoch;
    const lease = await this.#store.leaseOf({ sessionId, runId: driver.runId });
    const holds = lease?.live === true && lease.workerId === workerId && lease.epoch === epoch;
    if (!holds) driver.fail(lostLease(workerId, driver, epoch));
    return holds;
  }

  /**
   * Posts the request to the run's inbox and waits until it is done: settled by the driver, or
   * its fact (committed under the request's id) in the log. While waiting, a run nobody drives
   * any more (its driver died or parked it) is taken over here, which brings the request with it.
   */
  async #viaInbox(sessionId: string, runId: string, request: RunRequest): Promise<void> {
    const { closed, workerId } = this.#options;
    const posted: PostedRequest = {
      id: this.#options.generateId('request'),
      sessionId,
      runId,
      request,
    };
    const wait = new AbortController();
    const stopWaiting = () => wait.abort(closed.reason);
    closed.addEventListener('abort', stopWaiting, { once: true });
    const inLog = factLogged(this.#store, sessionId, posted.id, runId);
    try {
      await this.#store.postToInbox({
        id: posted.id,
        sessionId,
        runId,
        kind: request.kind,
        input: request.input as JsonObject,
        postedBy: workerId,
      });
      const settled = this.#store.waitForInboxOutcome(posted.id, { signal: wait.signal });
      settled.catch(() => {});
      await this.#outcome(posted, settled, inLog, wait.signal);
    } finally {
      inLog.unsubscribe();
      closed.removeEventListener('abort', stopWaiting);
      wait.abort();
    }
  }

  /**
   * Waits for the first of: the request's settlement, its fact in the log, the run's end, or a
   * tick every `leaseMs / 4`; on the end or a tick, a run nobody drives any more is looked after
   * (`#doneWithoutDriver`). The end counts at once: a request that commits no fact (a decision
   * already made) is settled by its driver after it was done, and the run may end first, taking
   * the lease the settlement is made under with it; its sender then learned only at its next
   * tick, up to `leaseMs / 4` later (15 s with a minute's lease).
   */
  async #outcome(
    posted: PostedRequest,
    settled: Promise<InboxOutcome>,
    inLog: LoggedWait,
    signal: AbortSignal,
  ): Promise<void> {
    let ended: Promise<'ended'> | undefined = inLog.ended;
    while (true) {
      const tick = delay(this.#options.leaseMs / 4, signal).then(() => 'tick' as const);
      const next: InboxOutcome | 'logged' | 'ended' | 'tick' = await Promise.race([
        settled,
        inLog.logged,
        tick,
        ...(ended === undefined ? [] : [ended]),
      ]);
      if (next === 'logged') return;
      if (next === 'ended') ended = undefined;
      else if (next !== 'tick') {
        if (next.status === 'accepted') return;
        throw refusalError(next.error, posted.sessionId, posted.request);
      }
      if (await this.#doneWithoutDriver(posted)) return;
    }
  }

  /**
   * On a tick: `false` while somebody drives the run (wait on); when nobody does, takes the run
   * here (its inbox then brings the request: wait on), or learns that it ended: `true` when the
   * request was done, else `NoActiveRunError`.
   */
  async #doneWithoutDriver({ id, sessionId, runId, request }: PostedRequest): Promise<boolean> {
    const lease = await this.#store.leaseOf({ sessionId, runId });
    if (lease?.live === true) return false;
    // Nobody drives the run: take it here (its inbox then brings this request), or learn
    // that it ended, with the request done or not. Once posted, a request is never done
    // again by its sender: a race here only means waiting on.
    const runs = this.#options.runs();
    let target: Awaited<ReturnType<TenureHost['active']>>;
    try {
      target = await runs.withSession(sessionId, () => runs.active(sessionId));
    } catch (error) {
      if (isRace(error)) return false;
      throw error;
    }
    const driving =
      target === undefined ? undefined : 'elsewhere' in target ? target.elsewhere : target;
    if (driving?.runId === runId) return false;
    const facts = await this.#store.read(sessionId);
    if (facts.some((fact) => fact.id === id)) return true;
    // The same decision made by someone else before the run ended: a no-op, as with one process.
    if (request.kind === 'decide' && endedRunDecided(facts, runId, request)) return true;
    throw new NoActiveRunError({
      message: `runtime.${request.kind}(): run ${runId} of session ${sessionId} ended before this ${request.kind} could be recorded; nothing was recorded. Start a new run with runtime.send().`,
      sessionId,
    });
  }
}

/** A race with another worker or a takeover: the request is routed again. */
function isRace(error: unknown): boolean {
  return (
    LeaseLostError.isInstance(error) ||
    RunLeasedError.isInstance(error) ||
    ConcurrencyError.isInstance(error)
  );
}

/** What a sender waits for in the session's log: its request's fact, and its run's end. */
interface LoggedWait {
  logged: Promise<'logged'>;
  ended: Promise<'ended'>;
  unsubscribe: () => void;
}

/**
 * Resolves `logged` once a fact with id `id` reaches the session's log, and `ended` once run
 * `runId`'s `run.ended` does (subscribed from now on).
 */
function factLogged(store: SharedStore, sessionId: string, id: string, runId: string): LoggedWait {
  let onLogged!: (value: 'logged') => void;
  let onEnded!: (value: 'ended') => void;
  const logged = new Promise<'logged'>((resolve) => {
    onLogged = resolve;
  });
  const ended = new Promise<'ended'>((resolve) => {
    onEnded = resolve;
  });
  const unsubscribe = store.subscribe(sessionId, (fact) => {
    if (fact.id === id) onLogged('logged');
    if (fact.type === 'run.ended' && fact.runId === runId) onEnded('ended');
  });
  return { logged, ended, unsubscribe };
}

/** True when the ended run recorded exactly this decision (a different one is a `DecisionConflictError`). */
function endedRunDecided(
  facts: readonly Fact[],
  runId: string,
  request: Extract<RunRequest, { kind: 'decide' }>,
): boolean {
  const decided = facts.flatMap((fact) =>
    fact.type === 'tool.permission.decided' && fact.runId === runId ? [fact] : [],
  );
  if (!decided.some((fact) => fact.callId === request.input.callId)) return false;
  return validateDecision({ pending: [], decided, decision: request.input }).status === 'no-op';
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
