import type { PermissionDecision } from '../events/facts.ts';
import type { JsonValue } from '../events/json.ts';
import { decisionFits, type PendingDecision } from '../events/run-facts.ts';
import {
  isTurnlogErrorNamed,
  TurnlogError,
  type TurnlogErrorOptions,
} from '../events/turnlog-error.ts';
import type {
  DecidedPermission,
  PermissionPolicy,
  PermissionResult,
  PermissionVerdict,
  Tool,
} from './tool.ts';

const verdicts: readonly string[] = ['allow', 'ask', 'deny'] satisfies PermissionVerdict[];

/**
 * The permission of one validated call: the tool's own `permission` (a verdict or a function
 * of the validated input), then the runtime-wide `policy`, which may tighten or loosen it
 * (`undefined` keeps the tool's verdict). Throws `PermissionVerdictError` when either returns
 * something other than a verdict; the tool runtime turns any throw into an `error` settlement.
 *
 * @example
 * await evaluatePermission({ name: 'writeFile', tool, input, jsonInput: input, sessionId });
 * // { verdict: 'ask' }
 */
export async function evaluatePermission<TInput>({
  name,
  tool,
  input,
  jsonInput,
  sessionId,
  policy,
}: {
  name: string;
  tool: Pick<Tool<TInput>, 'permission'>;
  /** The schema's output: what `execute` will receive. */
  input: TInput;
  /** The same value as JSON (what `tool.started` records), for the policy. */
  jsonInput: JsonValue;
  sessionId: string;
  policy?: PermissionPolicy | undefined;
}): Promise<PermissionResult> {
  const own =
    typeof tool.permission === 'function' ? await tool.permission(input) : tool.permission;
  const toolVerdict = toPermissionResult(own, `the permission of tool "${name}"`);
  if (policy === undefined) return toolVerdict;
  const overridden = await policy({ name, input: jsonInput, toolVerdict, sessionId });
  if (overridden === undefined) return toolVerdict;
  return toPermissionResult(overridden, `the permission policy (for tool "${name}")`);
}

function toPermissionResult(value: unknown, source: string): PermissionResult {
  const candidate = (typeof value === 'string' ? { verdict: value } : value) as {
    verdict?: unknown;
    reason?: unknown;
  } | null;
  if (
    typeof candidate !== 'object' ||
    candidate === null ||
    !verdicts.includes(candidate.verdict as string) ||
    (candidate.reason !== undefined && typeof candidate.reason !== 'string')
  ) {
    throw new PermissionVerdictError({
      message: `${source} returned ${safeJson(value)}; return 'allow', 'ask', 'deny' or { verdict, reason }`,
    });
  }
  const result: PermissionResult = { verdict: candidate.verdict as PermissionVerdict };
  if (typeof candidate.reason === 'string') result.reason = candidate.reason;
  return result;
}

/** A decision as a caller submits it. `inputHash`, when given, must match the pending one. */
export interface DecisionRequest {
  callId: string;
  decision: PermissionDecision;
  inputHash?: string;
  reason?: string;
}

/** What `validateDecision` found: apply it, or it repeats a decision already made. */
export type DecisionValidation =
  | { status: 'apply'; pending: PendingDecision; inputHash: string }
  | { status: 'no-op'; previous: DecidedPermission & { callId: string } };

/**
 * Checks a submitted decision against the open ones before it is committed.
 * - no pending request for the call (and no earlier decision): `UnknownDecisionError`;
 * - an `inputHash` that is not the pending request's: `DecisionMismatchError`;
 * - `report-unknown` for a permission request, or `allow`/`deny` for an indeterminate call
 *   (which may have run; it can only be reported unknown or aborted): `InvalidDecisionError`;
 * - the same decision again for an already decided call: `{ status: 'no-op' }`;
 *   a different one: `DecisionConflictError`.
 *
 * @example
 * const checked = validateDecision({ pending, decided, decision: { callId, decision: 'allow' } });
 * if (checked.status === 'apply') await commit({ type: 'tool.permission.decided', … });
 */
export function validateDecision({
  pending,
  decided = [],
  decision,
}: {
  /** The run's open decisions. */
  pending: readonly PendingDecision[];
  /** Decisions already in the log for calls of the run (they are no longer pending). */
  decided?: readonly (DecidedPermission & { callId: string })[];
  decision: DecisionRequest;
}): DecisionValidation {
  const { callId } = decision;
  const open = pending.find((candidate) => candidate.callId === callId);
  if (open === undefined) {
    const previous = decided.findLast((candidate) => candidate.callId === callId);
    if (previous === undefined) {
      const openIds = pending.map((candidate) => `"${candidate.callId}"`).join(', ');
      throw new UnknownDecisionError({
        message: `No decision is pending for call "${callId}"; ${openIds === '' ? 'nothing is pending' : `pending calls: ${openIds}`}. Read runtime.pending(sessionId) for the open decisions`,
        callId,
      });
    }
    const sameInput = decision.inputHash === undefined || decision.inputHash === previous.inputHash;
    if (previous.decision === decision.decision && sameInput) return { status: 'no-op', previous };
    throw new DecisionConflictError({
      message: `Call "${callId}" was already decided '${previous.decision}'${previous.by === 'policy' ? ' by the policy' : ''}; a decision cannot be changed once it is in the log`,
      callId,
    });
  }
  if (decision.inputHash !== undefined && decision.inputHash !== open.inputHash) {
    throw new DecisionMismatchError({
      message: `The decision for call "${callId}" was made for input ${decision.inputHash}, but the pending request is for ${open.inputHash}; read the pending request again and decide on its input`,
      callId,
      expectedInputHash: open.inputHash,
      actualInputHash: decision.inputHash,
    });
  }
  if (!decisionFits(open.kind, decision.decision)) {
    throw new InvalidDecisionError({
      message:
        open.kind === 'permission'
          ? `Call "${callId}" waits for permission and never ran; decide 'allow', 'deny' or 'abort' ('report-unknown' resolves an indeterminate call)`
          : `Call "${callId}" is indeterminate: it started and may have run, so it is never run again; decide 'report-unknown' (the model is told the outcome is unknown) or 'abort'`,
      callId,
    });
  }
  return { status: 'apply', pending: open, inputHash: open.inputHash };
}

/** A tool permission or permission policy that returned something other than a verdict. */
export class PermissionVerdictError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<PermissionVerdictError>('PermissionVerdictError');

  constructor(options: TurnlogErrorOptions) {
    super(options);
    this.name = 'PermissionVerdictError';
  }
}

/** A decision for a call that has no pending request. */
export class UnknownDecisionError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<UnknownDecisionError>('UnknownDecisionError');
  readonly callId: string;

  constructor(options: TurnlogErrorOptions & { callId: string }) {
    super(options);
    this.name = 'UnknownDecisionError';
    this.callId = options.callId;
  }
}

/** A decision bound to an input hash other than the pending request's. */
export class DecisionMismatchError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<DecisionMismatchError>('DecisionMismatchError');
  readonly callId: string;
  readonly expectedInputHash: string;
  readonly actualInputHash: string;

  constructor(
    options: TurnlogErrorOptions & {
      callId: string;
      expectedInputHash: string;
      actualInputHash: string;
    },
  ) {
    super(options);
    this.name = 'DecisionMismatchError';
    this.callId = options.callId;
    this.expectedInputHash = options.expectedInputHash;
    this.actualInputHash = options.actualInputHash;
  }
}

/** A decision that does not fit the pending call. */
export class InvalidDecisionError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<InvalidDecisionError>('InvalidDecisionError');
  readonly callId: string;

  constructor(options: TurnlogErrorOptions & { callId: string }) {
    super(options);
    this.name = 'InvalidDecisionError';
    this.callId = options.callId;
  }
}

/** A different decision for a call that was already decided. */
export class DecisionConflictError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<DecisionConflictError>('DecisionConflictError');
  readonly callId: string;

  constructor(options: TurnlogErrorOptions & { callId: string }) {
    super(options);
    this.name = 'DecisionConflictError';
    this.callId = options.callId;
  }
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
