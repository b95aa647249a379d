import type { PermissionDecision } from '../../events/facts.ts';
import { InvalidArgumentError } from '../../runtime-errors.ts';

/**
 * What an approval of the UI message stream stands for: a person's answer to a permission ask,
 * a person's answer to an indeterminate call, or a decision the permission policy made alone
 * (streams before issue 25 showed it as an automatic approval; now it has none, as `streamText`
 * sends none for a tool that needs no approval, but such ids are still recognised and refused).
 */
export type ApprovalKind = 'permission' | 'indeterminate' | 'policy';

/** The facts an approval id is built from: it binds the call and the hash of its exact input. */
export interface ApprovalBinding {
  kind: ApprovalKind;
  /** The step whose call it is (call ids repeat across steps). */
  stepId: string;
  callId: string;
  /** The hash the decision must be recorded with (I5). */
  inputHash: string;
}

const kinds: readonly ApprovalKind[] = ['permission', 'indeterminate', 'policy'];

/** The approval id of a binding: `kind:stepId:callId:inputHash`, each field URI-encoded. */
export function approvalId(binding: ApprovalBinding): string {
  return [binding.kind, binding.stepId, binding.callId, binding.inputHash]
    .map(encodeURIComponent)
    .join(':');
}

/** The binding an approval id was built from, or `undefined` if it is not one of ours. */
export function parseApprovalId(id: string): ApprovalBinding | undefined {
  const fields = id.split(':');
  if (fields.length !== 4) return undefined;
  let decoded: string[];
  try {
    decoded = fields.map(decodeURIComponent);
  } catch {
    return undefined;
  }
  const [kind, stepId, callId, inputHash] = decoded as [string, string, string, string];
  if (!kinds.includes(kind as ApprovalKind) || stepId === '' || callId === '' || inputHash === '') {
    return undefined;
  }
  return { kind: kind as ApprovalKind, stepId, callId, inputHash };
}

/** What approving and denying record, for the two kinds of decision a person gives. */
export const approvalAnswers = {
  permission: { approve: 'allow', deny: 'deny' },
  indeterminate: { approve: 'report-unknown', deny: 'abort' },
} as const satisfies Record<
  Exclude<ApprovalKind, 'policy'>,
  { approve: PermissionDecision; deny: PermissionDecision }
>;

/** The arguments of `runtime.decide()` an approval response stands for (add the `sessionId`). */
export interface ApprovalDecision {
  callId: string;
  decision: PermissionDecision;
  /** The input hash the approval was requested for: `decide()` refuses it if the input changed. */
  inputHash: string;
  reason?: string;
}

/**
 * Maps a UI approval response (a tool part's `approval` once `addToolApprovalResponse` answered
 * it) back to `runtime.decide()` arguments, bound to the input hash the approval was requested
 * for. Approving a permission ask records `allow`, denying it `deny`; approving an
 * indeterminate call records `report-unknown`, denying it `abort`.
 *
 * Throws `InvalidArgumentError` for an approval turnlog did not request, or one the permission
 * policy answered by itself (`isAutomatic`).
 *
 * @example
 * for (const part of lastMessage.parts) {
 *   if (isToolUIPart(part) && part.state === 'approval-responded' && !part.approval.isAutomatic) {
 *     await runtime.decide({ sessionId, ...decisionFromApproval(part.approval) });
 *   }
 * }
 */
export function decisionFromApproval(approval: {
  id: string;
  approved: boolean;
  reason?: string | undefined;
}): ApprovalDecision {
  const id = approval?.id;
  const binding = typeof id === 'string' ? parseApprovalId(id) : undefined;
  if (binding === undefined) {
    throw new InvalidArgumentError({
      message: `decisionFromApproval(): ${JSON.stringify(id)} is not an approval id from toUIMessageStream(); answer the approval requests the stream sent.`,
      argument: 'approval.id',
    });
  }
  if (binding.kind === 'policy') {
    throw new InvalidArgumentError({
      message: `decisionFromApproval(): approval ${id} was decided by the permission policy (isAutomatic); there is nothing for a person to answer.`,
      argument: 'approval.id',
    });
  }
  if (typeof approval.approved !== 'boolean') {
    throw new InvalidArgumentError({
      message: `decisionFromApproval(): approval ${id} has no answer yet (approved must be true or false).`,
      argument: 'approval.approved',
    });
  }
  const answers = approvalAnswers[binding.kind];
  return {
    callId: binding.callId,
    decision: approval.approved ? answers.approve : answers.deny,
    inputHash: binding.inputHash,
    ...(typeof approval.reason === 'string' && approval.reason !== ''
      ? { reason: approval.reason }
      : {}),
  };
}
