import type { FinishReason as UIFinishReason } from 'ai';
import { assertNever, type Fact, type FactOf, type FinishReason } from '../events/facts.ts';
import type { TurnEvent } from '../machines/effects/turn-channel.ts';
import type { TurnlogMessageMetadata, TurnlogUIMessageChunk } from './ui-message-types.ts';
import { createToolChunks } from './ui-tool-chunks.ts';

type Chunk = TurnlogUIMessageChunk;
type Kind = 'text' | 'reasoning';

/** The step whose parts the message shows last. */
interface StepState {
  stepId: string;
  /** Text and reasoning the current attempt streamed, as the content parts they will be. */
  streamed: { type: Kind; text: string }[];
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
  const tools = createToolChunks();
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
      const id = `${step.stepId}:${step.streamed.length}`;
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
    // Text and reasoning parts; a part of another kind has no text part to be shown as.
    const content = fact.content.flatMap((part) =>
      part.type === 'text' || part.type === 'reasoning'
        ? [{ type: part.type, text: part.text }]
        : [],
    );
    const callIds = fact.toolCalls.map((call) => call.callId);
    const streamedAsLogged =
      JSON.stringify(step.streamed) === JSON.stringify(content) &&
      step.streamedCalls.every((callId, index) => callIds[index] === callId);
    if (!streamedAsLogged) {
      resetAttempt(out);
      content.forEach(({ type, text }, index) => {
        const id = `${fact.stepId}:${index}`;
        out.push({ type: `${type}-start`, id }, { type: `${type}-delta`, id, delta: text });
        out.push({ type: `${type}-end`, id });
      });
    }
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
          if (!step.streamedCalls.includes(event.callId)) {
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
            status: event.state === 'awaitingPermission' ? 'awaiting' : 'running',
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
