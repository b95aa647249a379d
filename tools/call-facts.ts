import type { ProposedFact, RunLimits, ToolCallRecord, ToolOutcome } from '../events/facts.ts';
import { assertNever } from '../events/facts.ts';
import type { JsonValue } from '../events/json.ts';
import type { ExecutionResult } from './execute-tool.ts';
import { settlementText } from './settlement-text.ts';
import type { PermissionResult, SettleContext, Tool } from './tool.ts';
import { toolFactId } from './tool-fact-id.ts';
import {
  formatToolOutput,
  redactedMessage,
  type ToolSecrets,
  truncateText,
} from './tool-output.ts';

/** How one call settles: the outcome and what its `tool.settled` says. */
export interface Settlement {
  outcome: ToolOutcome;
  text: string;
  /** Given when `text` is already bounded (a formatted output); absent, `text` is cut here. */
  truncated?: boolean;
  output?: JsonValue;
  durationMs?: number;
}

/** The call's one `tool.settled`, its text bounded to what the model may see. */
export function settledDraft(
  call: ToolCallRecord,
  context: Pick<SettleContext, 'stepId' | 'limits'>,
  settlement: Settlement,
): ProposedFact {
  const bounded =
    settlement.truncated === undefined
      ? truncateText(settlement.text.trim(), context.limits.toolOutputChars)
      : { text: settlement.text, truncated: settlement.truncated };
  const draft: ProposedFact = {
    type: 'tool.settled',
    id: toolFactId({ stepId: context.stepId, callId: call.callId, kind: 'settled' }),
    callId: call.callId,
    name: call.name,
    outcome: settlement.outcome,
    text: bounded.text,
    truncated: bounded.truncated,
  };
  if (settlement.output !== undefined) draft.output = settlement.output;
  if (settlement.durationMs !== undefined) draft.durationMs = settlement.durationMs;
  return draft;
}

/**
 * The fact a permission verdict decides a call with: `tool.permission.decided` (`by: 'policy'`)
 * for allow and deny, `tool.permission.requested` for ask.
 */
export function verdictDraft(
  call: ToolCallRecord,
  context: Pick<SettleContext, 'stepId'>,
  permission: PermissionResult,
  validated: { json: JsonValue; inputHash: string },
): ProposedFact {
  const reason = permission.reason === undefined ? {} : { reason: permission.reason };
  switch (permission.verdict) {
    case 'allow':
    case 'deny':
      return {
        type: 'tool.permission.decided',
        id: toolFactId({ stepId: context.stepId, callId: call.callId, kind: 'decided' }),
        callId: call.callId,
        decision: permission.verdict,
        inputHash: validated.inputHash,
        by: 'policy',
        ...reason,
      };
    case 'ask':
      return {
        type: 'tool.permission.requested',
        id: toolFactId({ stepId: context.stepId, callId: call.callId, kind: 'requested' }),
        callId: call.callId,
        name: call.name,
        input: validated.json,
        inputHash: validated.inputHash,
        ...reason,
      };
    default:
      return assertNever(permission.verdict, 'permission verdict');
  }
}

/**
 * The `tool.started` of a call's `execution` (1, or 2 and more when it runs again after a
 * restart), bound to the validated input its allow was given for.
 */
export function startedDraft(
  call: ToolCallRecord,
  context: Pick<SettleContext, 'stepId'>,
  validated: { json: JsonValue; inputHash: string },
  execution: number,
): ProposedFact {
  const kind = execution === 1 ? 'started' : (`started-${execution}` as const);
  return {
    type: 'tool.started',
    id: toolFactId({ stepId: context.stepId, callId: call.callId, kind }),
    callId: call.callId,
    name: call.name,
    input: validated.json,
    inputHash: validated.inputHash,
  };
}

/**
 * How an execution settles: a returned value is `success` (or `error`, withheld, when the
 * tool's secrets cannot be read), a throw `error` (`cancelled` after a stop), a timeout
 * `error`, a hang past the stop grace `unknown`.
 */
export function executionSettlement({
  result,
  tool,
  secrets,
  limits,
  durationMs,
}: {
  result: ExecutionResult;
  tool: Pick<Tool, 'timeoutMs'>;
  /** Read after execute: a tool may learn a secret while running (a fetched token). */
  secrets: ToolSecrets;
  limits: RunLimits;
  durationMs: number;
}): Settlement {
  switch (result.kind) {
    case 'returned':
      if (!secrets.readable) {
        // Fail closed: a result that cannot be redacted is never recorded (no `output`).
        const text = settlementText.outputWithheld(secrets.problem);
        return { outcome: 'error', text, durationMs };
      }
      return {
        outcome: 'success',
        ...formatToolOutput({
          value: result.value,
          maxChars: limits.toolOutputChars,
          secrets: secrets.secrets,
        }),
        durationMs,
      };
    case 'threw': {
      const failure = redactedMessage(result.error, secrets);
      return result.afterStop
        ? { outcome: 'cancelled', text: settlementText.failedAfterStop(failure), durationMs }
        : { outcome: 'error', text: settlementText.failed(failure), durationMs };
    }
    case 'timeout':
      return { outcome: 'error', text: settlementText.timedOut(tool.timeoutMs), durationMs };
    case 'abandoned':
      return {
        outcome: 'unknown',
        text: settlementText.abandonedAfterStop(limits.stopGraceMs),
        durationMs,
      };
    default:
      return assertNever(result, 'execution result');
  }
}
