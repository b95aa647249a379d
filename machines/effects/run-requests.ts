import type { Fact, ProposedFact } from '../../events/facts.ts';
import type { IdGenerator } from '../../events/ids.ts';
import { projectTurn } from '../../events/project-turn.ts';
import { TurnlogError } from '../../events/turnlog-error.ts';
import {
  DamagedSessionError,
  InvalidArgumentError,
  NoActiveRunError,
} from '../../runtime-errors.ts';
import {
  DecisionConflictError,
  DecisionMismatchError,
  InvalidDecisionError,
  UnknownDecisionError,
  validateDecision,
} from '../../tools/permission-policy.ts';
import type { RunDriver } from './run-driver.ts';

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
 * it means the request was done before (a driver that died before settling it). A decision is
 * checked against the driver's log once the appends it has in flight returned.
 */
export async function performRequest(
  driver: RunDriver,
  request: RunRequest,
  context: { sessionId: string; generateId: IdGenerator; id?: string },
): Promise<void> {
  const { sessionId, id } = context;
  // The driver's copy of the log takes a fact only when its append returns, but the fact is in
  // the store (a caller read it there: runtime.pending()) as soon as it committed. Checked
  // before its appends in flight returned, a decision for a call just requested would be refused
  // (UnknownDecisionError) although the call waits for it. A steer or stop reads nothing there,
  // and keeps its place before the facts the driver is about to append.
  if (request.kind === 'decide') await driver.drained();
  if (id !== undefined && driver.facts().some((fact) => fact.id === id)) return;
  const withId = id === undefined ? {} : { id };
  let draft: ProposedFact;
  switch (request.kind) {
    case 'decide': {
      const { callId, decision, reason } = request.input;
      const checked = checkDecision(driver.facts(), request, () =>
        goesOn(driver) ? undefined : endedBefore(driver, request, sessionId),
      );
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
  throw endedBefore(driver, request, sessionId);
}

/**
 * A decision checked against the session's last run: its pending calls and the decisions made.
 * A call not pending in a run that ended or is stopping is `ended()`'s error, not
 * `UnknownDecisionError`: the call may have been pending until the run's end settled it.
 */
function checkDecision(
  facts: readonly Fact[],
  request: Extract<RunRequest, { kind: 'decide' }>,
  ended: () => NoActiveRunError | undefined,
) {
  const view = projectTurn(facts).runs.at(-1);
  const decided = facts.flatMap((fact) =>
    fact.type === 'tool.permission.decided' && fact.runId === view?.runId ? [fact] : [],
  );
  try {
    return validateDecision({ pending: view?.pending ?? [], decided, decision: request.input });
  } catch (error) {
    throw (UnknownDecisionError.isInstance(error) && ended()) || error;
  }
}

/** True while the driver's live actor takes requests: not ended, not stopping. */
function goesOn(driver: RunDriver): boolean {
  const snapshot = driver.snapshot();
  return snapshot?.status === 'active' && !snapshot.hasTag('stopping');
}

/** `NoActiveRunError` for a request the driver's run ended (or began stopping) before it recorded. */
function endedBefore(driver: RunDriver, request: RunRequest, sessionId: string): NoActiveRunError {
  return new NoActiveRunError({
    message: `runtime.${request.kind}(): run ${driver.runId} of session ${sessionId} ended (or is stopping) before this ${request.kind} could be recorded; nothing was recorded. Start a new run with runtime.send().`,
    sessionId,
  });
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
