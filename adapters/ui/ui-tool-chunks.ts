import {
  assertNever,
  type FactOf,
  type ProviderToolCallPart,
  type ProviderToolResultPart,
} from '../../events/facts.ts';
import { reconcileText } from '../../events/reconcile-text.ts';
import { type ApprovalKind, approvalAnswers, approvalId } from './ui-approval.ts';
import type { TurnlogUIMessageChunk } from './ui-message-types.ts';

type Chunk = TurnlogUIMessageChunk;

/** The tool facts of one call, after its step completed. */
type ToolFact = FactOf<
  | 'tool.permission.requested'
  | 'tool.permission.decided'
  | 'tool.started'
  | 'tool.indeterminate'
  | 'tool.reconciled'
  | 'tool.settled'
>;

/** One call of the last completed step, and where its approval stands. */
interface CallState {
  name: string;
  /** The input the call's part shows. */
  input: unknown;
  /** The hash of the input the latest fact bound the call to (asked, decided, started). */
  inputHash: string | undefined;
  approval:
    | { id: string; kind: Exclude<ApprovalKind, 'policy'>; approved: boolean | undefined }
    | undefined;
}

/** The title a call that may have run shows (a tool part's `title`), beside its `toolMetadata`. */
export const mayHaveRunTitle = 'May have run: it started before a restart and never finished';

const indeterminateReason =
  'This call started before the process stopped and never finished: it may or may not have run, ' +
  'and it will not run again. Approve to tell the model its outcome is unknown; deny to abort the run.';

/**
 * The tool part of the translation: the calls of the last completed step as tool parts, and
 * their facts as approvals and outputs. An approval a person answers (`permission`,
 * `indeterminate`) carries what approving and denying record, in its `approvalDescriptor` and in
 * a `data-decision` part. A call nobody is asked about (the tool's or the policy's own verdict)
 * has no approval, as `streamText` sends an allowed tool: input-available, then its output (a
 * denied one: output-error with the denial's text). A call that may have run (started before a
 * restart) says so in standard terms: its part's `title` and `toolMetadata.mayHaveRun`, and
 * its approval's reason. A part whose approval was denied (or never
 * answered before a stop) ends `output-denied`, any other failure `output-error` with the
 * settlement text: the AI SDK accepts nothing else after an approval (`validateUIMessages`).
 * Provider-executed tools' calls and results (`step.completed` content) are tool parts marked
 * `providerExecuted`, with no approval: turnlog never runs them.
 *
 * The chunks per fact:
 *
 * ```text
 * step.completed             tool-input-available per call (after the step's content)
 * tool.permission.requested  tool-approval-request, data-decision (what approve/deny record)
 * tool.indeterminate         tool-input-available (title, toolMetadata.mayHaveRun),
 *                            tool-approval-request, data-decision (no approval when its tool
 *                            checks it: check)
 * tool.reconciled            data-reconciled (what the check found), tool-input-available with
 *                            the finding as its title, [the approval's answer again]; unknown: also
 *                            tool-approval-request, data-decision (the reason says what it found)
 * tool.permission.decided    asked: tool-approval-response, data-decision (with the decision)
 *                            not asked (the tool's or the policy's verdict): nothing
 * tool.started               nothing
 * tool.settled               [tool-approval-response approved: false, if never answered]
 *                            tool-output-denied | tool-output-available | tool-output-error
 * ```
 */
export class ToolChunks {
  /** The last completed step: its calls' approval ids name it (call ids repeat across steps). */
  #stepId = '';
  /** The calls of the last completed step not settled yet. */
  #calls = new Map<string, CallState>();
  /** The provider-executed calls the run's message shows (a result may come steps later). */
  readonly #providerCalls = new Set<string>();

  /** The step's calls as tool parts with their input (a withheld call's best-effort input). */
  proposed(fact: FactOf<'step.completed'>): Chunk[] {
    this.#stepId = fact.stepId;
    this.#calls = new Map();
    const out: Chunk[] = [];
    for (const call of fact.toolCalls) {
      if (this.#calls.has(call.callId)) continue;
      this.#calls.set(call.callId, {
        name: call.name,
        input: call.input,
        inputHash: undefined,
        approval: undefined,
      });
      out.push({
        type: 'tool-input-available',
        toolCallId: call.callId,
        toolName: call.name,
        input: call.input,
      });
    }
    return out;
  }

  /** True once the message has a part for this provider-executed call. */
  showsProviderCall(callId: string): boolean {
    return this.#providerCalls.has(callId);
  }

  /**
   * A provider-executed tool's call or result (a `step.completed` content part) as the AI SDK
   * shows one: a tool part marked `providerExecuted`, input-available, then output-available
   * or output-error. turnlog never runs, asks about or settles these calls.
   */
  provider(part: ProviderToolCallPart | ProviderToolResultPart): Chunk[] {
    const out: Chunk[] = [];
    const toolCallId = part.callId;
    const metadata =
      part.providerOptions === undefined ? {} : { providerMetadata: part.providerOptions };
    if (part.type === 'provider-tool-call' || !this.#providerCalls.has(toolCallId)) {
      // A result whose call is not in this run's message gets a part of its own (input null:
      // the run holds no input for it), so the output has a part to land on.
      this.#providerCalls.add(toolCallId);
      out.push({
        type: 'tool-input-available',
        toolCallId,
        toolName: part.name,
        input: part.type === 'provider-tool-call' ? part.input : null,
        providerExecuted: true,
        ...(part.type === 'provider-tool-call' ? metadata : {}),
      });
    }
    if (part.type === 'provider-tool-call') return out;
    if (part.isError) {
      const errorText = typeof part.result === 'string' ? part.result : JSON.stringify(part.result);
      out.push({
        type: 'tool-output-error',
        toolCallId,
        errorText,
        providerExecuted: true,
        ...metadata,
      });
    } else {
      out.push({
        type: 'tool-output-available',
        toolCallId,
        output: part.result,
        providerExecuted: true,
        ...metadata,
      });
    }
    return out;
  }

  /** The chunks a tool fact adds (none for a call the last completed step did not make). */
  translate(fact: ToolFact): Chunk[] {
    const call = this.#calls.get(fact.callId);
    if (call === undefined) return [];
    if ('inputHash' in fact) call.inputHash = fact.inputHash;
    switch (fact.type) {
      case 'tool.permission.requested':
        return this.#approvalRequested(call, fact.callId, 'permission', fact.reason);
      case 'tool.indeterminate':
        return [
          {
            type: 'tool-input-available',
            toolCallId: fact.callId,
            toolName: call.name,
            input: call.input,
            title: mayHaveRunTitle,
            toolMetadata: { mayHaveRun: true },
          },
          // Its tool is asked first (check); a person only if it cannot tell.
          ...(fact.check === undefined
            ? this.#approvalRequested(call, fact.callId, 'indeterminate', indeterminateReason)
            : []),
        ];
      case 'tool.reconciled':
        return this.#reconciled(call, fact);
      case 'tool.permission.decided':
        return this.#decided(call, fact);
      case 'tool.settled':
        return this.#settled(call, fact);
      case 'tool.started':
        return [];
      default:
        return assertNever(fact, 'tool fact');
    }
  }

  /** A person is asked: the approval request, and what approving and denying record. */
  #approvalRequested(
    call: CallState,
    callId: string,
    kind: 'permission' | 'indeterminate',
    reason?: string,
  ): Chunk[] {
    if (call.inputHash === undefined) return [];
    const id = approvalId({ kind, stepId: this.#stepId, callId, inputHash: call.inputHash });
    call.approval = { id, kind, approved: undefined };
    return [
      {
        type: 'tool-approval-request',
        approvalId: id,
        toolCallId: callId,
        ...(reason === undefined ? {} : { reason }),
        approvalDescriptor: { kind, ...approvalAnswers[kind] },
      },
      {
        type: 'data-decision',
        id,
        data: { kind, toolCallId: callId, toolName: call.name, ...approvalAnswers[kind] },
      },
    ];
  }

  /** What the check after a restart found; a person is asked when the tool could not tell. */
  #reconciled(call: CallState, fact: FactOf<'tool.reconciled'>): Chunk[] {
    const text = reconcileText(fact.answer, fact.reason);
    const out: Chunk[] = [
      {
        type: 'data-reconciled',
        id: fact.id,
        data: { toolCallId: fact.callId, toolName: call.name, answer: fact.answer, text },
      },
      // In standard terms too: the part's title says what the check found.
      {
        type: 'tool-input-available',
        toolCallId: fact.callId,
        toolName: call.name,
        input: call.input,
        title: `${text.charAt(0).toUpperCase()}${text.slice(1)}`,
        toolMetadata: { mayHaveRun: true, reconciled: fact.answer },
      },
    ];
    const asked = call.approval;
    if (asked?.approved !== undefined && fact.answer !== 'unknown') {
      // The part keeps the answer it had (tool-input-available left it input-available).
      out.push({ type: 'tool-approval-response', approvalId: asked.id, approved: asked.approved });
    }
    if (fact.answer === 'unknown') {
      // Asked again (the same approval, when one was pending): the part waits for a person.
      out.push(
        ...this.#approvalRequested(
          call,
          fact.callId,
          'indeterminate',
          `${text}. ${indeterminateReason}`,
        ),
      );
    } else if (asked !== undefined && asked.approved === undefined) {
      // A person had been asked after an earlier restart; the tool answered instead.
      asked.approved = true;
      out.push({
        type: 'tool-approval-response',
        approvalId: asked.id,
        approved: true,
        reason: text,
      });
    }
    return out;
  }

  /** The decision as the answer to the person's approval (none when nobody was asked). */
  #decided(call: CallState, fact: FactOf<'tool.permission.decided'>): Chunk[] {
    const reason = fact.reason === undefined ? {} : { reason: fact.reason };
    const approved = fact.decision === 'allow' || fact.decision === 'report-unknown';
    const asked = call.approval;
    // Decided without asking anyone: no approval, as streamText sends a tool that needs none
    // (a denial shows as the settlement's output-error).
    if (fact.by === 'policy' || asked === undefined) return [];
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

  /** The settlement as the tool's output, error or denial; the call is done. */
  #settled(call: CallState, fact: FactOf<'tool.settled'>): Chunk[] {
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
    this.#calls.delete(fact.callId);
    return out;
  }
}
