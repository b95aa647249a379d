import { assertNever, type FactOf } from '../events/facts.ts';
import { type ApprovalKind, approvalAnswers, approvalId } from './ui-approval.ts';
import type { TurnlogUIMessageChunk } from './ui-message-types.ts';

type Chunk = TurnlogUIMessageChunk;

/** The tool facts of one call, after its step completed. */
type ToolFact = FactOf<
  | 'tool.permission.requested'
  | 'tool.permission.decided'
  | 'tool.started'
  | 'tool.indeterminate'
  | 'tool.settled'
>;

/** One call of the last completed step, and where its approval stands. */
interface CallState {
  name: string;
  /** The hash of the input the latest fact bound the call to (asked, decided, started). */
  inputHash: string | undefined;
  approval: { id: string; kind: ApprovalKind; approved: boolean | undefined } | undefined;
}

const indeterminateReason =
  'This call started before the process stopped and never finished: it may or may not have run, ' +
  'and it will not run again. Approve to tell the model its outcome is unknown; deny to abort the run.';

/**
 * The tool part of the translation: the calls of the last completed step as tool parts, and
 * their facts as approvals and outputs. An approval a person answers (`permission`,
 * `indeterminate`) comes with a `data-decision` part saying what approving and denying record;
 * a policy decision is an automatic approval. A part whose approval was denied (or never
 * answered before a stop) ends `output-denied`, any other failure `output-error` with the
 * settlement text: the AI SDK accepts nothing else after an approval (`validateUIMessages`).
 */
export function createToolChunks() {
  let stepId = '';
  let calls = new Map<string, CallState>();

  function request(
    call: CallState,
    callId: string,
    kind: 'permission' | 'indeterminate',
    reason?: string,
  ): Chunk[] {
    if (call.inputHash === undefined) return [];
    const id = approvalId({ kind, stepId, callId, inputHash: call.inputHash });
    call.approval = { id, kind, approved: undefined };
    return [
      {
        type: 'tool-approval-request',
        approvalId: id,
        toolCallId: callId,
        ...(reason === undefined ? {} : { reason }),
      },
      {
        type: 'data-decision',
        id,
        data: { kind, toolCallId: callId, toolName: call.name, ...approvalAnswers[kind] },
      },
    ];
  }

  function decided(call: CallState, fact: FactOf<'tool.permission.decided'>): Chunk[] {
    const reason = fact.reason === undefined ? {} : { reason: fact.reason };
    const approved = fact.decision === 'allow' || fact.decision === 'report-unknown';
    const asked = call.approval;
    if (fact.by === 'policy' || asked === undefined || asked.kind === 'policy') {
      // Decided without asking anyone: an automatic approval, as the AI SDK sends its own.
      const id = approvalId({
        kind: 'policy',
        stepId,
        callId: fact.callId,
        inputHash: fact.inputHash,
      });
      call.approval = { id, kind: 'policy', approved };
      return [
        {
          type: 'tool-approval-request',
          approvalId: id,
          toolCallId: fact.callId,
          isAutomatic: true,
        },
        { type: 'tool-approval-response', approvalId: id, approved, ...reason },
      ];
    }
    asked.approved = approved;
    const { id, kind } = asked;
    return [
      { type: 'tool-approval-response', approvalId: id, approved, ...reason },
      {
        type: 'data-decision',
        id,
        data: {
          kind,
          toolCallId: fact.callId,
          toolName: call.name,
          ...approvalAnswers[kind],
          decision: fact.decision,
        },
      },
    ];
  }

  function settled(call: CallState, fact: FactOf<'tool.settled'>): Chunk[] {
    const out: Chunk[] = [];
    const toolCallId = fact.callId;
    if (call.approval !== undefined && call.approval.approved === undefined) {
      // Asked and never answered (the run was stopped): the part needs an answer to be valid.
      call.approval.approved = false;
      out.push({
        type: 'tool-approval-response',
        approvalId: call.approval.id,
        approved: false,
        reason: fact.text,
      });
    }
    if (call.approval?.approved === false) {
      out.push({ type: 'tool-output-denied', toolCallId });
    } else if (fact.outcome === 'success') {
      const output = fact.output === undefined ? fact.text : fact.output;
      out.push({ type: 'tool-output-available', toolCallId, output });
    } else {
      // The settlement text says why, in words: withheld, invalid, failed, cancelled, unknown.
      out.push({ type: 'tool-output-error', toolCallId, errorText: fact.text });
    }
    calls.delete(fact.callId);
    return out;
  }

  return {
    /** The step's calls as tool parts with their input (a withheld call's best-effort input). */
    proposed(fact: FactOf<'step.completed'>): Chunk[] {
      stepId = fact.stepId;
      calls = new Map();
      const out: Chunk[] = [];
      for (const call of fact.toolCalls) {
        if (calls.has(call.callId)) continue;
        calls.set(call.callId, { name: call.name, inputHash: undefined, approval: undefined });
        out.push({
          type: 'tool-input-available',
          toolCallId: call.callId,
          toolName: call.name,
          input: call.input,
        });
      }
      return out;
    },

    /** The chunks a tool fact adds (none for a call the last completed step did not make). */
    translate(fact: ToolFact): Chunk[] {
      const call = calls.get(fact.callId);
      if (call === undefined) return [];
      if ('inputHash' in fact) call.inputHash = fact.inputHash;
      switch (fact.type) {
        case 'tool.permission.requested':
          return request(call, fact.callId, 'permission', fact.reason);
        case 'tool.indeterminate':
          return request(call, fact.callId, 'indeterminate', indeterminateReason);
        case 'tool.permission.decided':
          return decided(call, fact);
        case 'tool.settled':
          return settled(call, fact);
        case 'tool.started':
          return [];
        default:
          return assertNever(fact, 'tool fact');
      }
    },
  };
}
