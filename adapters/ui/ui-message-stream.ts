import type { Fact } from '../../events/facts.ts';
import type { TurnEvent, TurnHandle } from '../../machines/effects/turn-channel.ts';
import { recordedStateHasTag } from '../../machines/pure/state-tags.ts';
import { ChunkTranslator } from './ui-message-chunks.ts';
import { foldChunks } from './ui-message-fold.ts';
import type { TurnlogUIMessage, TurnlogUIMessageChunk } from './ui-message-types.ts';

export { type ApprovalDecision, decisionFromApproval } from './ui-approval.ts';
export type {
  TurnlogDataTypes,
  TurnlogDecisionData,
  TurnlogMessageMetadata,
  TurnlogUIMessage,
  TurnlogUIMessageChunk,
} from './ui-message-types.ts';

/** Options of `toUIMessageStream`. */
export interface ToUIMessageStreamOptions {
  /**
   * Continue a message the client already holds up to this fact (its metadata's `seq` when its
   * last stream ended): the chunks of the facts through it are not sent again. Default: the
   * whole run from `run.started`, which a client resuming with `resumeStream()` replays.
   */
  afterSeq?: number;
}

/**
 * A run as an AI SDK 7 UI message stream, for `useChat` (or any `Chat`): one assistant message
 * whose `id` is the `runId` and whose metadata carries the last fact's `seq` and the run's
 * status. Text and reasoning stream as they arrive, tool calls as input parts, each permission
 * ask as a `tool-approval-request` (its approval id binds the call and its input hash), each
 * decision as the approval's response, each settlement as the tool's output, error or denial.
 * A provider-executed tool's call (web search, code execution) is a tool part marked
 * `providerExecuted`, with the provider's result as its output or error, and no approval.
 *
 * The stream ends when the run ends (`finish`, `error` then `finish`, or `abort`) or when it
 * waits for a person (`finish` with reason `tool-calls`): the client answers the approvals
 * (`addToolApprovalResponse`), sends its messages back, and the server records the answers
 * with `decisionFromApproval` and continues with `{ afterSeq }`. If the handle's events fail
 * (the runtime closed), the stream errors: to the client it is a disconnect to resume from.
 *
 * @example
 * const turn = await runtime.send({ sessionId: chatId, text });
 * return createUIMessageStreamResponse({ stream: toUIMessageStream(turn) });
 */
export function toUIMessageStream(
  turn: Pick<TurnHandle, 'sessionId' | 'runId'> & {
    events: AsyncIterable<TurnEvent> | Iterable<TurnEvent>;
  },
  options: ToUIMessageStreamOptions = {},
): ReadableStream<TurnlogUIMessageChunk> {
  const translator = new ChunkTranslator(turn);
  const afterSeq = options.afterSeq ?? 0;
  let iterator: AsyncIterator<TurnEvent> | Iterator<TurnEvent> | undefined;
  // An event read ahead to tell whether a waiting run has more to show.
  let lookahead: Promise<IteratorResult<TurnEvent>> | undefined;
  let sending = false;
  let closed = false;

  /** Lets go of the events; a `next()` still waiting resolves when the run moves on. */
  function release() {
    closed = true;
    Promise.resolve(iterator?.return?.()).catch(() => {});
  }

  function close(controller: ReadableStreamDefaultController<TurnlogUIMessageChunk>) {
    release();
    controller.close();
  }

  return new ReadableStream<TurnlogUIMessageChunk>({
    async pull(controller) {
      iterator ??=
        Symbol.asyncIterator in turn.events
          ? turn.events[Symbol.asyncIterator]()
          : turn.events[Symbol.iterator]();
      const events = iterator;
      while (!closed) {
        let next: IteratorResult<TurnEvent>;
        try {
          next = await (lookahead ?? events.next());
        } catch (error) {
          if (!closed) controller.error(error);
          closed = true;
          return;
        }
        lookahead = undefined;
        if (closed) return;
        if (next.done) return close(controller);
        const event = next.value;
        const chunks = translator.translate(event);
        // Until the fact at `afterSeq`, the client already has what these chunks add.
        if (!sending && 'seq' in event && event.runId === turn.runId && event.seq > afterSeq) {
          sending = true;
          const metadata = translator.metadata();
          controller.enqueue({ type: 'start', messageId: turn.runId, messageMetadata: metadata });
        }
        if (!sending || chunks.length === 0) continue;
        for (const chunk of chunks) controller.enqueue(chunk);
        const last = chunks.at(-1)?.type;
        if (last === 'finish' || last === 'abort') return close(controller);
        if ('seq' in event && recordedStateHasTag(event.state, 'needsPerson')) {
          // Caught up with a run that waits for a person: the answers come in a new request.
          // (Events already buffered resolve before a timer fires: a decision recorded before
          // this stream started is shown, not mistaken for the wait.)
          const ahead = Promise.resolve(events.next());
          lookahead = ahead;
          const moved = await Promise.race([
            ahead.then(
              () => true,
              () => true,
            ),
            new Promise<false>((resolve) => setTimeout(resolve, 0, false)),
          ]);
          if (!moved && !closed) {
            const messageMetadata = translator.metadata();
            controller.enqueue({ type: 'finish', finishReason: 'tool-calls', messageMetadata });
            close(controller);
          }
        }
        return;
      }
    },
    cancel: release,
  });
}

/**
 * A session's conversation as UI messages, from its facts alone: per run, the user's input and
 * the assistant message `toUIMessageStream` would have built (text, reasoning, tool parts in
 * their final states, approvals, provider-executed tools, steering), so a chat page starts
 * from the log.
 *
 * @example
 * const chat = new Chat({ id: sessionId, messages: toUIMessages(await runtime.facts(sessionId)) });
 */
export function toUIMessages(facts: readonly Fact[]): TurnlogUIMessage[] {
  const runs = new Map<string, Fact[]>();
  for (const fact of facts) {
    const key = `${fact.sessionId}\u0000${fact.runId}`;
    const run = runs.get(key) ?? [];
    run.push(fact);
    runs.set(key, run);
  }
  const messages: TurnlogUIMessage[] = [];
  for (const run of runs.values()) {
    const first = run[0] as Fact;
    const started = run.find((fact) => fact.type === 'run.started');
    if (started?.type === 'run.started') {
      messages.push({
        id: started.id,
        role: 'user',
        parts: [{ type: 'text', text: started.input.text }],
      });
    }
    const translator = new ChunkTranslator(first);
    const message: TurnlogUIMessage = { id: first.runId, role: 'assistant', parts: [] };
    for (const fact of run) foldChunks(message, translator.translate(fact));
    messages.push(message);
  }
  return messages;
}
