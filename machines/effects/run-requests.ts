import type { Fact, ProposedFact } from '../../events/facts.ts';
import type { IdGenerator } from '../../events/ids.ts';
import type { JsonObject } from '../../events/json.ts';
import { projectTurn } from '../../events/project-turn.ts';
import { TurnlogError } from '../../events/turnlog-error.ts';
import {
  DamagedSessionError,
  InvalidArgumentError,
  NoActiveRunError,
} from '../../runtime-errors.ts';
import { ConcurrencyError } from '../../store/event-store.ts';
import type { InboxOutcome } from '../../store/run-inbox.ts';
import { LeaseLostError, RunLeasedError } from '../../store/run-leases.ts';
import {
  DecisionConflictError,
  DecisionMismatchError,
  InvalidDecisionError,
  UnknownDecisionError,
  validateDecision,
} from '../../tools/permission-policy.ts';
import type { DrivenElsewhere } from './live-runs.ts';
import type { RunDriver } from './run-driver.ts';
import type { SharedStore } from './worker-leases.ts';

/** What a caller asks of a session's unfinished run: `runtime.decide()`, `steer()` or `stop()`. */
export type RunRequest =
  | {
      kind: 'decide';
      input: {
        callId: string;
        decision: 'allow' | 'deny' | 'report-unknown' | 'abort';
        reason?: string | undefined;
        inputHash?: string | undefined;
      };
    }
  | { kind: 'steer'; input: { text: string } }
  | { kind: 'stop'; input: { reason?: string | undefined } };

/**
 * Does a request on the run's live driver: the one implementation of decide, steer and stop,
 * for a caller of this runtime and for a request another worker posted to the run's inbox. With
 * `id` (the inbox request's), the fact it commits gets that id, and a fact already logged under
 * it means the request was done before (a driver that died before settling it).
 */
export async function performRequest(
  driver: RunDriver,
  request: RunRequest,
  context: { sessionId: string; generateId: IdGenerator; id?: string },
): Promise<void> {
  const { sessionId, id } = context;
  if (id !== undefined && driver.facts().some((fact) => fact.id === id)) return;
  const withId = id === undefined ? {} : { id };
  let draft: ProposedFact;
  switch (request.kind) {
    case 'decide': {
      const { callId, decision, reason } = request.input;
      const checked = checkDecision(driver.facts(), request);
      if (checked.status === 'no-op') return;
      draft = {
        type: 'tool.permission.decided',
        ...withId,
        callId,
        decision,
        inputHash: checked.inputHash,
        by: 'user',
        ...(reason === undefined ? {} : { reason }),
      };
      break;
    }
    case 'steer':
      draft = {
        type: 'steering.received',
        ...withId,
        messageId: context.generateId('message'),
        text: request.input.text,
      };
      break;
    case 'stop':
      draft = {
        type: 'run.stop.requested',
        ...withId,
        reason: request.input.reason ?? 'stopped by the user',
      };
      break;
  }
  if (await driver.commit(draft)) return;
  // A stop while the run is already stopping: the first one is in effect.
  if (request.kind === 'stop' && driver.snapshot()?.hasTag('stopping')) return;
  throw new NoActiveRunError({
    message: `runtime.${request.kind}(): run ${driver.runId} of session ${sessionId} ended (or is stopping) before this ${request.kind} could be recorded; nothing was recorded. Start a new run with runtime.send().`,
    sessionId,
  });
}

/** A decision checked against the session's last run: its pending calls and the decisions made. */
function checkDecision(facts: readonly Fact[], request: Extract<RunRequest, { kind: 'decide' }>) {
  const view = projectTurn(facts).runs.at(-1);
  const decided = facts.flatMap((fact) =>
    fact.type === 'tool.permission.decided' && fact.runId === view?.runId ? [fact] : [],
  );
  return validateDecision({ pending: view?.pending ?? [], decided, decision: request.input });
}

/** `NoActiveRunError` for a request to a session without an unfinished run. */
export function noActiveRun(sessionId: string, kind: RunRequest['kind']): NoActiveRunError {
  return new NoActiveRunError({
    message: `runtime.${kind}(): session ${sessionId} has no unfinished run; start one with runtime.send().`,
    sessionId,
  });
}

/** The errors a request is refused with: the request's own fault, reported back to its sender. */
const refusals: Record<
  string,
  (message: string, sessionId: string, request: RunRequest) => TurnlogError
> = {
  NoActiveRunError: (message, sessionId) => new NoActiveRunError({ message, sessionId }),
  DamagedSessionError: (message, sessionId) =>
    new DamagedSessionError({ message, sessionId, runId: undefined, damage: [message] }),
  InvalidArgumentError: (message) => new InvalidArgumentError({ message, argument: 'input' }),
  UnknownDecisionError: (message, _, request) =>
    new UnknownDecisionError({ message, callId: callIdOf(request) }),
  InvalidDecisionError: (message, _, request) =>
    new InvalidDecisionError({ message, callId: callIdOf(request) }),
  DecisionConflictError: (message, _, request) =>
    new DecisionConflictError({ message, callId: callIdOf(request) }),
  DecisionMismatchError: (message, _, request) =>
    new DecisionMismatchError({
      message,
      callId: callIdOf(request),
      // The driver's pending hash is in the message; the refusal carries name and message only.
      expectedInputHash: '',
      actualInputHash: request.kind === 'decide' ? (request.input.inputHash ?? '') : '',
    }),
};

/** True for an error that refuses the request itself (settled `refused`, thrown to its sender). */
export function isRefusal(error: unknown): error is TurnlogError {
  return TurnlogError.isTurnlogError(error) && Object.hasOwn(refusals, error.name);
}

/** The error a refused request's sender throws: the class the driver threw, with its message. */
export function refusalError(
  error: { name: string; message: string },
  sessionId: string,
  request: RunRequest,
): TurnlogError {
  const make = refusals[error.name];
  if (make !== undefined) return make(error.message, sessionId, request);
  const unknown = new TurnlogError({ message: error.message });
  unknown.name = error.name;
  return unknown;
}

function callIdOf(request: RunRequest): string {
  return request.kind === 'decide' ? request.input.callId : '';
}

/** A race with another worker or a takeover: the request is routed again. */
function isRace(error: unknown): boolean {
  return (
    LeaseLostError.isInstance(error) ||
    RunLeasedError.isInstance(error) ||
    ConcurrencyError.isInstance(error)
  );
}

export interface RequestRouterOptions {
  store: SharedStore;
  workerId: string;
  leaseMs: number;
  generateId: IdGenerator;
  withSession: <T>(sessionId: string, work: () => Promise<T>) => Promise<T>;
  /** The session's unfinished run driven here (taken over when nobody drives it), or where it is driven. */
  active: (sessionId: string) => Promise<RunDriver | DrivenElsewhere | undefined>;
  /** Whether this worker's live driver still holds its run's lease (`liveRuns.stillDriving`). */
  stillDriving: (sessionId: string, driver: RunDriver) => Promise<boolean>;
  /** Raised when the runtime closes: a request still waiting ends with it. */
  closed: AbortSignal;
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
export function createRequestRouter(options: RequestRouterOptions) {
  const { store, withSession } = options;

  async function route(sessionId: string, request: RunRequest): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        const elsewhere = await withSession(sessionId, async () => {
          const target = await options.active(sessionId);
          if (target === undefined) throw noActiveRun(sessionId, request.kind);
          if ('elsewhere' in target) return target.elsewhere;
          try {
            await performRequest(target, request, { sessionId, generateId: options.generateId });
          } catch (error) {
            // A refusal from this driver's copy of the log counts only while the driver still
            // holds the run: a paused worker's copy may lag (the decision was made elsewhere).
            if (isRefusal(error) && !(await options.stillDriving(sessionId, target))) {
              throw new LeaseLostError({
                message: `runtime.${request.kind}(): this worker's driver of run ${target.runId} lost its lease`,
                sessionId,
                runId: target.runId,
                workerId: options.workerId,
                epoch: 0,
                current: undefined,
              });
            }
            throw error;
          }
          return undefined;
        });
        if (elsewhere === undefined) return;
        return await viaInbox(sessionId, elsewhere.runId, request);
      } catch (error) {
        if (attempt >= maxRoutes || !isRace(error)) throw error;
        await delay(Math.min(options.leaseMs / 4, 10 * attempt), options.closed);
      }
    }
  }

  /**
   * Posts the request to the run's inbox and waits until it is done: settled by the driver, or
   * its fact (committed under the request's id) in the log. While waiting, a run nobody drives
   * any more (its driver died or parked it) is taken over here, which brings the request with it.
   */
  async function viaInbox(sessionId: string, runId: string, request: RunRequest): Promise<void> {
    const id = options.generateId('request');
    const wait = new AbortController();
    const stopWaiting = () => wait.abort(options.closed.reason);
    options.closed.addEventListener('abort', stopWaiting, { once: true });
    let logged!: () => void;
    const inLog = new Promise<'logged'>((resolve) => {
      logged = () => resolve('logged');
    });
    const unsubscribe = store.subscribe(sessionId, (fact) => {
      if (fact.id === id) logged();
    });
    try {
      await store.postToInbox({
        id,
        sessionId,
        runId,
        kind: request.kind,
        input: request.input as JsonObject,
        postedBy: options.workerId,
      });
      const settled = store.waitForInboxOutcome(id, { signal: wait.signal });
      settled.catch(() => {});
      while (true) {
        const tick = delay(options.leaseMs / 4, wait.signal).then(() => 'tick' as const);
        const next: InboxOutcome | 'logged' | 'tick' = await Promise.race([settled, inLog, tick]);
        if (next === 'logged') return;
        if (next !== 'tick') {
          if (next.status === 'accepted') return;
          throw refusalError(next.error, sessionId, request);
        }
        const lease = await store.leaseOf({ sessionId, runId });
        if (lease?.live === true) continue;
        // Nobody drives the run: take it here (its inbox then brings this request), or learn
        // that it ended, with the request done or not. Once posted, a request is never done
        // again by its sender: a race here only means waiting on.
        let target: Awaited<ReturnType<RequestRouterOptions['active']>>;
        try {
          target = await withSession(sessionId, () => options.active(sessionId));
        } catch (error) {
          if (isRace(error)) continue;
          throw error;
        }
        const driving =
          target === undefined ? undefined : 'elsewhere' in target ? target.elsewhere : target;
        if (driving?.runId === runId) continue;
        const facts = await store.read(sessionId);
        if (facts.some((fact) => fact.id === id)) return;
        // The same decision made by someone else before the run ended: a no-op, as with one process.
        if (request.kind === 'decide' && endedRunDecided(facts, runId, request)) return;
        throw new NoActiveRunError({
          message: `runtime.${request.kind}(): run ${runId} of session ${sessionId} ended before this ${request.kind} could be recorded; nothing was recorded. Start a new run with runtime.send().`,
          sessionId,
        });
      }
    } finally {
      unsubscribe();
      options.closed.removeEventListener('abort', stopWaiting);
      wait.abort();
    }
  }

  return { route };
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
