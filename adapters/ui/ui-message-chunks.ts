import type { FinishReason as UIFinishReason } from 'ai';
import {
  assertNever,
  type ContentPart,
  type Fact,
  type FactOf,
  type FinishReason,
} from '../../events/facts.ts';
import type { TurnEvent } from '../../machines/effects/turn-channel.ts';
import { recordedStateHasTag } from '../../machines/pure/state-tags.ts';
import type { TurnlogMessageMetadata, TurnlogUIMessageChunk } from './ui-message-types.ts';
import { ToolChunks } from './ui-tool-chunks.ts';

type Chunk = TurnlogUIMessageChunk;
type Kind = 'text' | 'reasoning';
/** A part the message shows for the step, in order: text, reasoning, a provider-executed call. */
type Shown = { type: Kind; text: string } | { type: 'provider-call'; callId: string };

/** The step whose parts the message shows last. */
interface StepState {
  stepId: string;
  /**
   * Text, reasoning and provider-executed calls the current attempt streamed, as the content
   * parts they will be.
   */
  streamed: Shown[];
  /** The text or reasoning part still open. */
  open: { type: Kind; id: string } | undefined;
  /** Calls whose input the current attempt streamed, in order. */
  streamedCalls: string[];
  /** Parts of the current attempt are in the message (`reset-step` removes them). */
  emitted: boolean;
  /** `step.completed` arrived: the step's parts are the log's. */
  completed: boolean;
}

/**
 * Translates one run's events (facts and deltas, in order) into AI SDK UI message chunks:
 * the single translation behind `toUIMessageStream` (live) and `toUIMessages` (from the log).
 * Text the deltas streamed is checked against `step.completed` (the log wins); parts of an
 * attempt that left nothing in the log (failed, cut by a stop) are removed with `reset-step`,
 * so a message built live ends equal to the one rebuilt from the log.
 *
 * The chunks per event (`translate`), `[…]` when needed. Every fact but `run.ended` then adds
 * `message-metadata`; deltas of another step, or of a completed one, add nothing.
 *
 * ```text
 * text.delta, reasoning.delta  [the open part's -end] [<kind>-start] <kind>-delta
 * tool.input.delta             [a call's first: the open part's -end, tool-input-start]
 *                              tool-input-delta
 * step.started (a new step)    [leftovers] steering-message* start-step
 * step.started (a new attempt) [<kind>-end] [reset-step]
 * step.completed               [<kind>-end]; streamed as logged: the provider tool parts;
 *                              else [reset-step] and the content's parts in order (text,
 *                              reasoning, provider tool parts); then tool-input-available
 *                              per call (ToolChunks.proposed), finish-step
 * step.failed                  [<kind>-end] [reset-step]
 * tool.*                       ToolChunks.translate
 * steering.received            nothing yet: its steering-message goes before the next step
 * run.stop.requested           nothing (its reason is the abort's)
 * run.ended                    [leftovers] steering-message* message-metadata, then
 *                              finish | error finish | abort
 * leftovers (a step that never completed): [<kind>-end] [reset-step] finish-step
 * ```
 */
export class ChunkTranslator {
  readonly #runId: string;
  #metadata: TurnlogMessageMetadata;
  #step: StepState | undefined = undefined;
  readonly #tools = new ToolChunks();
  #steering: FactOf<'steering.received'>[] = [];
  #lastFinish: FinishReason | undefined = undefined;
  #stopReason: string | undefined = undefined;
  #ended = false;

  constructor(ids: { sessionId: string; runId: string }) {
    this.#runId = ids.runId;
    this.#metadata = {
      sessionId: ids.sessionId,
      runId: ids.runId,
      seq: 0,
      state: undefined,
      status: 'running',
    };
  }

  /** The message's metadata after the events translated so far. */
  metadata(): TurnlogMessageMetadata {
    return this.#metadata;
  }

  /** The chunks one event adds to the run's message (none for another run's event). */
  translate(event: TurnEvent): Chunk[] {
    // I7: nothing follows run.ended; a damaged log's extra facts are not shown.
    if (event.runId !== this.#runId || this.#ended) return [];
    const out: Chunk[] = [];
    switch (event.type) {
      case 'text.delta':
        this.#textDelta(out, 'text', event.stepId, event.text);
        return out;
      case 'reasoning.delta':
        this.#textDelta(out, 'reasoning', event.stepId, event.text);
        return out;
      case 'tool.input.delta':
        this.#toolInputDelta(out, event);
        return out;
      default:
        this.#metadata = {
          ...this.#metadata,
          seq: event.seq,
          state: event.state ?? this.#metadata.state,
          status: recordedStateHasTag(event.state, 'needsPerson') ? 'awaiting' : 'running',
        };
        this.#fact(out, event);
        return out;
    }
  }

  /** The chunks of one fact of the run. */
  #fact(out: Chunk[], event: Fact): void {
    switch (event.type) {
      case 'run.started':
        break;
      case 'step.started':
        this.#stepStarted(out, event);
        break;
      case 'step.completed':
        this.#stepCompleted(out, event);
        break;
      case 'step.failed':
        if (this.#step?.stepId === event.stepId && !this.#step.completed) this.#resetAttempt(out);
        break;
      case 'tool.permission.requested':
      case 'tool.permission.decided':
      case 'tool.started':
      case 'tool.indeterminate':
      case 'tool.reconciled':
      case 'tool.settled':
        out.push(...this.#tools.translate(event));
        break;
      case 'steering.received':
        this.#steering.push(event);
        break;
      case 'run.stop.requested':
        this.#stopReason = event.reason;
        break;
      case 'run.ended':
        this.#runEnded(out, event);
        return;
      case 'compaction.started':
      case 'compaction.completed':
      case 'compaction.failed':
      case 'retry.due':
      case 'run.recovered':
        break;
      default:
        assertNever(event, 'fact');
    }
    out.push({ type: 'message-metadata', messageMetadata: this.#metadata });
  }

  /** A text or reasoning delta of the current attempt, in the part of its kind that is open. */
  #textDelta(out: Chunk[], type: Kind, stepId: string, text: string): void {
    const step = this.#step;
    if (step === undefined || step.completed || step.stepId !== stepId) return;
    if (step.open?.type !== type) {
      this.#closeOpenPart(out);
      const id = `${step.stepId}:${step.streamed.filter((item) => item.type !== 'provider-call').length}`;
      step.open = { type, id };
      step.streamed.push({ type, text: '' });
      out.push({ type: `${type}-start`, id });
    }
    (step.streamed.at(-1) as { text: string }).text += text;
    step.emitted = true;
    out.push({ type: `${type}-delta`, id: step.open.id, delta: text });
  }

  /** A delta of a call's input: a provider-executed call's part shows in the step's content. */
  #toolInputDelta(out: Chunk[], event: Extract<TurnEvent, { type: 'tool.input.delta' }>): void {
    const step = this.#step;
    if (step === undefined || step.completed || step.stepId !== event.stepId) return;
    if (event.providerExecuted === true) {
      const { callId } = event;
      if (!step.streamed.some((item) => 'callId' in item && item.callId === callId)) {
        // Text after the provider's call is a part of its own, as in the step's content.
        this.#closeOpenPart(out);
        step.streamed.push({ type: 'provider-call', callId });
        out.push({
          type: 'tool-input-start',
          toolCallId: callId,
          toolName: event.name,
          providerExecuted: true,
        });
      }
    } else if (!step.streamedCalls.includes(event.callId)) {
      // As streamText does: the text before a call ends where the call begins.
      this.#closeOpenPart(out);
      step.streamedCalls.push(event.callId);
      out.push({ type: 'tool-input-start', toolCallId: event.callId, toolName: event.name });
    }
    step.emitted = true;
    out.push({ type: 'tool-input-delta', toolCallId: event.callId, inputTextDelta: event.delta });
  }

  #stepStarted(out: Chunk[], fact: FactOf<'step.started'>): void {
    if (this.#step?.stepId === fact.stepId) {
      // A new attempt of the same step: what an earlier attempt showed is not in the log.
      this.#resetAttempt(out);
      return;
    }
    this.#endStep(out);
    // As the AI SDK sends it: steering goes before the step that received it.
    this.#flushSteering(out);
    out.push({ type: 'start-step' });
    this.#step = {
      stepId: fact.stepId,
      streamed: [],
      open: undefined,
      streamedCalls: [],
      emitted: false,
      completed: false,
    };
  }

  /**
   * The step as the log has it: what the attempt streamed stays if it is what the log says,
   * else it is replaced by the logged content; then the step's calls, and the step's end.
   */
  #stepCompleted(out: Chunk[], fact: FactOf<'step.completed'>): void {
    const step = this.#step;
    if (step === undefined || step.stepId !== fact.stepId || step.completed) return;
    this.#closeOpenPart(out);
    const { logged, begins } = loggedParts(fact.content, this.#tools);
    const callIds = fact.toolCalls.map((call) => call.callId);
    const streamedAsLogged =
      JSON.stringify(step.streamed) === JSON.stringify(logged) &&
      step.streamedCalls.every((callId, index) => callIds[index] === callId);
    if (!streamedAsLogged) this.#resetAttempt(out);
    this.#sendContent(out, fact, begins, !streamedAsLogged);
    out.push(...this.#tools.proposed(fact));
    out.push({ type: 'finish-step' });
    step.completed = true;
    step.emitted = true;
    this.#lastFinish = fact.finishReason;
  }

  /**
   * The step's content as chunks: its text and reasoning parts only when `resend` (parts that
   * streamed as logged stay); a provider call's part (streamed or not) always gets its input,
   * and its result updates it in place.
   */
  #sendContent(
    out: Chunk[],
    fact: FactOf<'step.completed'>,
    begins: readonly boolean[],
    resend: boolean,
  ): void {
    let textIndex = 0;
    let open: { type: Kind; id: string } | undefined;
    fact.content.forEach((part, index) => {
      if (begins[index] && open !== undefined) {
        if (resend) out.push({ type: `${open.type}-end`, id: open.id });
        open = undefined;
      }
      if (part.type === 'text' || part.type === 'reasoning') {
        if (begins[index]) {
          open = { type: part.type, id: `${fact.stepId}:${textIndex}` };
          textIndex += 1;
          if (resend) out.push({ type: `${part.type}-start`, id: open.id });
        }
        if (resend && open !== undefined && part.text !== '') {
          out.push({ type: `${part.type}-delta`, id: open.id, delta: part.text });
        }
      } else {
        out.push(...this.#tools.provider(part));
      }
    });
    if (resend && open !== undefined) out.push({ type: `${open.type}-end`, id: open.id });
  }

  #runEnded(out: Chunk[], fact: FactOf<'run.ended'>): void {
    this.#ended = true;
    this.#endStep(out);
    this.#flushSteering(out);
    this.#metadata = { ...this.#metadata, status: fact.status, reason: fact.reason };
    out.push({ type: 'message-metadata', messageMetadata: this.#metadata });
    switch (fact.status) {
      case 'completed':
        out.push({ type: 'finish', finishReason: uiFinishReason(this.#lastFinish) });
        break;
      case 'failed': {
        const detail = fact.error === undefined ? '' : `: ${fact.error.message}`;
        out.push({ type: 'error', errorText: `The run failed (${fact.reason})${detail}` });
        out.push({ type: 'finish', finishReason: 'error' });
        break;
      }
      case 'aborted':
        out.push({ type: 'abort', reason: this.#stopReason ?? fact.reason });
        break;
      default:
        assertNever(fact.status, 'run status');
    }
  }

  /** Leaves the current step: an attempt that never completed shows nothing. */
  #endStep(out: Chunk[]): void {
    const step = this.#step;
    if (step === undefined) return;
    if (!step.completed) {
      this.#resetAttempt(out);
      out.push({ type: 'finish-step' });
    }
    this.#step = undefined;
  }

  /** Removes what the current attempt showed: it is not (or not as shown) in the log. */
  #resetAttempt(out: Chunk[]): void {
    const step = this.#step;
    if (step === undefined) return;
    this.#closeOpenPart(out);
    if (step.emitted) out.push({ type: 'reset-step' });
    step.streamed = [];
    step.streamedCalls = [];
    step.emitted = false;
  }

  #closeOpenPart(out: Chunk[]): void {
    const step = this.#step;
    if (step?.open === undefined) return;
    out.push({ type: `${step.open.type}-end`, id: step.open.id });
    step.open = undefined;
  }

  /** The steering messages received since the last step started. */
  #flushSteering(out: Chunk[]): void {
    for (const fact of this.#steering) {
      out.push({
        type: 'steering-message',
        id: fact.messageId,
        parts: [{ type: 'text', text: fact.text }],
      });
    }
    this.#steering = [];
  }
}

/**
 * The parts a completed step's content shows, in order, as deltas would have built them:
 * adjacent text (or reasoning) parts are one part (deltas carry no part ids); a provider tool's
 * result lands on its call's part unless the message has none for that call yet. `begins` says,
 * per content part, whether it begins a shown part.
 */
function loggedParts(
  content: readonly ContentPart[],
  tools: ToolChunks,
): { logged: Shown[]; begins: boolean[] } {
  const logged: Shown[] = [];
  const begins: boolean[] = [];
  for (const part of content) {
    const last = logged.at(-1);
    if (part.type === 'text' || part.type === 'reasoning') {
      if (last?.type === part.type && 'text' in last) last.text += part.text;
      else if (part.text !== '') logged.push({ type: part.type, text: part.text });
      begins.push(last?.type !== part.type && part.text !== '');
    } else {
      const { callId } = part;
      const shown =
        tools.showsProviderCall(callId) ||
        logged.some((item) => 'callId' in item && item.callId === callId);
      if (!shown) logged.push({ type: 'provider-call', callId });
      begins.push(!shown);
    }
  }
  return { logged, begins };
}

/** The AI SDK's finish reason for the run's last step. */
function uiFinishReason(reason: FinishReason | undefined): UIFinishReason {
  const unified = reason?.unified;
  return unified === undefined || unified === 'unknown' ? 'other' : unified;
}
