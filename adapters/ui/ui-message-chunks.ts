import type { FinishReason as UIFinishReason } from 'ai';
import { assertNever, type Fact, type FactOf, type FinishReason } from '../../events/facts.ts';
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
 */
export function createChunkTranslator(ids: { sessionId: string; runId: string }) {
  let metadata: TurnlogMessageMetadata = {
    sessionId: ids.sessionId,
    runId: ids.runId,
    seq: 0,
    state: undefined,
    status: 'running',
  };
  let step: StepState | undefined;
  const tools = new ToolChunks();
  let steering: FactOf<'steering.received'>[] = [];
  let lastFinish: FinishReason | undefined;
  let stopReason: string | undefined;
  let ended = false;

  function closeOpenPart(out: Chunk[]) {
    if (step?.open === undefined) return;
    out.push({ type: `${step.open.type}-end`, id: step.open.id });
    step.open = undefined;
  }

  function delta(out: Chunk[], type: Kind, stepId: string, text: string) {
    if (step === undefined || step.completed || step.stepId !== stepId) return;
    if (step.open?.type !== type) {
      closeOpenPart(out);
      const id = `${step.stepId}:${step.streamed.filter((item) => item.type !== 'provider-call').length}`;
      step.open = { type, id };
      step.streamed.push({ type, text: '' });
      out.push({ type: `${type}-start`, id });
    }
    (step.streamed.at(-1) as { text: string }).text += text;
    step.emitted = true;
    out.push({ type: `${type}-delta`, id: step.open.id, delta: text });
  }

  /** Removes what the current attempt showed: it is not (or not as shown) in the log. */
  function resetAttempt(out: Chunk[]) {
    if (step === undefined) return;
    closeOpenPart(out);
    if (step.emitted) out.push({ type: 'reset-step' });
    step.streamed = [];
    step.streamedCalls = [];
    step.emitted = false;
  }

  function flushSteering(out: Chunk[]) {
    for (const fact of steering) {
      out.push({
        type: 'steering-message',
        id: fact.messageId,
        parts: [{ type: 'text', text: fact.text }],
      });
    }
    steering = [];
  }

  function stepStarted(out: Chunk[], fact: FactOf<'step.started'>) {
    if (step?.stepId === fact.stepId) {
      // A new attempt of the same step: what an earlier attempt showed is not in the log.
      resetAttempt(out);
      return;
    }
    endStep(out);
    // As the AI SDK sends it: steering goes before the step that received it.
    flushSteering(out);
    out.push({ type: 'start-step' });
    step = {
      stepId: fact.stepId,
      streamed: [],
      open: undefined,
      streamedCalls: [],
      emitted: false,
      completed: false,
    };
  }

  /** Leaves the current step: an attempt that never completed shows nothing. */
  function endStep(out: Chunk[]) {
    if (step === undefined) return;
    if (!step.completed) {
      resetAttempt(out);
      out.push({ type: 'finish-step' });
    }
    step = undefined;
  }

  function stepCompleted(out: Chunk[], fact: FactOf<'step.completed'>) {
    if (step === undefined || step.stepId !== fact.stepId || step.completed) return;
    closeOpenPart(out);
    // The parts the log says the step shows, in order, as deltas would have built them:
    // adjacent text (or reasoning) parts are one part (deltas carry no part ids); a provider
    // tool's result lands on its call's part unless the message has none for that call yet.
    const logged: Shown[] = [];
    /** Per content part: it begins a shown part. */
    const begins: boolean[] = [];
    for (const part of fact.content) {
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
    const callIds = fact.toolCalls.map((call) => call.callId);
    const streamedAsLogged =
      JSON.stringify(step.streamed) === JSON.stringify(logged) &&
      step.streamedCalls.every((callId, index) => callIds[index] === callId);
    if (!streamedAsLogged) resetAttempt(out);
    // Parts that streamed stay; what did not is sent now. A provider call's part (streamed or
    // not) gets its input; its result updates it in place.
    const send = (chunk: Chunk) => {
      if (!streamedAsLogged) out.push(chunk);
    };
    let textIndex = 0;
    let open: { type: Kind; id: string } | undefined;
    const close = () => {
      if (open !== undefined) send({ type: `${open.type}-end`, id: open.id });
      open = undefined;
    };
    fact.content.forEach((part, index) => {
      if (begins[index]) close();
      if (part.type === 'text' || part.type === 'reasoning') {
        if (begins[index]) {
          open = { type: part.type, id: `${fact.stepId}:${textIndex}` };
          textIndex += 1;
          send({ type: `${part.type}-start`, id: open.id });
        }
        if (open !== undefined && part.text !== '') {
          send({ type: `${part.type}-delta`, id: open.id, delta: part.text });
        }
      } else {
        out.push(...tools.provider(part));
      }
    });
    close();
    out.push(...tools.proposed(fact));
    out.push({ type: 'finish-step' });
    step.completed = true;
    step.emitted = true;
    lastFinish = fact.finishReason;
  }

  function end(out: Chunk[], fact: FactOf<'run.ended'>) {
    ended = true;
    endStep(out);
    flushSteering(out);
    metadata = { ...metadata, status: fact.status, reason: fact.reason };
    out.push({ type: 'message-metadata', messageMetadata: metadata });
    switch (fact.status) {
      case 'completed':
        out.push({ type: 'finish', finishReason: uiFinishReason(lastFinish) });
        break;
      case 'failed': {
        const detail = fact.error === undefined ? '' : `: ${fact.error.message}`;
        out.push({ type: 'error', errorText: `The run failed (${fact.reason})${detail}` });
        out.push({ type: 'finish', finishReason: 'error' });
        break;
      }
      case 'aborted':
        out.push({ type: 'abort', reason: stopReason ?? fact.reason });
        break;
      default:
        assertNever(fact.status, 'run status');
    }
  }

  function fact(out: Chunk[], event: Fact) {
    switch (event.type) {
      case 'run.started':
        break;
      case 'step.started':
        stepStarted(out, event);
        break;
      case 'step.completed':
        stepCompleted(out, event);
        break;
      case 'step.failed':
        if (step?.stepId === event.stepId && !step.completed) resetAttempt(out);
        break;
      case 'tool.permission.requested':
      case 'tool.permission.decided':
      case 'tool.started':
      case 'tool.indeterminate':
      case 'tool.settled':
        out.push(...tools.translate(event));
        break;
      case 'steering.received':
        steering.push(event);
        break;
      case 'run.stop.requested':
        stopReason = event.reason;
        break;
      case 'run.ended':
        end(out, event);
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
    out.push({ type: 'message-metadata', messageMetadata: metadata });
  }

  return {
    /** The chunks one event adds to the run's message (none for another run's event). */
    translate(event: TurnEvent): Chunk[] {
      // I7: nothing follows run.ended; a damaged log's extra facts are not shown.
      if (event.runId !== ids.runId || ended) return [];
      const out: Chunk[] = [];
      switch (event.type) {
        case 'text.delta':
          delta(out, 'text', event.stepId, event.text);
          return out;
        case 'reasoning.delta':
          delta(out, 'reasoning', event.stepId, event.text);
          return out;
        case 'tool.input.delta':
          if (step === undefined || step.completed || step.stepId !== event.stepId) return out;
          if (event.providerExecuted === true) {
            const { callId } = event;
            if (!step.streamed.some((item) => 'callId' in item && item.callId === callId)) {
              // Text after the provider's call is a part of its own, as in the step's content.
              closeOpenPart(out);
              step.streamed.push({ type: 'provider-call', callId });
              out.push({
                type: 'tool-input-start',
                toolCallId: callId,
                toolName: event.name,
                providerExecuted: true,
              });
            }
          } else if (!step.streamedCalls.includes(event.callId)) {
            step.streamedCalls.push(event.callId);
            out.push({ type: 'tool-input-start', toolCallId: event.callId, toolName: event.name });
          }
          step.emitted = true;
          out.push({
            type: 'tool-input-delta',
            toolCallId: event.callId,
            inputTextDelta: event.delta,
          });
          return out;
        default:
          metadata = {
            ...metadata,
            seq: event.seq,
            state: event.state ?? metadata.state,
            status: recordedStateHasTag(event.state, 'needsPerson') ? 'awaiting' : 'running',
          };
          fact(out, event);
          return out;
      }
    },
    /** The message's metadata after the events translated so far. */
    metadata: (): TurnlogMessageMetadata => metadata,
  };
}

/** The AI SDK's finish reason for the run's last step. */
function uiFinishReason(reason: FinishReason | undefined): UIFinishReason {
  const unified = reason?.unified;
  return unified === undefined || unified === 'unknown' ? 'other' : unified;
}
