import type { Fact, FactOf } from '../../events/facts.ts';
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
  TurnlogReconciledData,
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
  return new ReadableStream<TurnlogUIMessageChunk>(new RunChunkSource(turn, options));
}

type Controller = ReadableStreamDefaultController<TurnlogUIMessageChunk>;
type StreamedTurn = Parameters<typeof toUIMessageStream>[0];

/**
 * The source of `toUIMessageStream`'s stream: reads the run's events one pull at a time,
 * translates them, and sends the chunks after `afterSeq`, until the run ends or waits for a
 * person.
 */
class RunChunkSource implements UnderlyingDefaultSource<TurnlogUIMessageChunk> {
  readonly #runId: string;
  readonly #events: AsyncIterable<TurnEvent> | Iterable<TurnEvent>;
  readonly #translator: ChunkTranslator;
  readonly #afterSeq: number;
  #iterator: AsyncIterator<TurnEvent> | Iterator<TurnEvent> | undefined = undefined;
  /** An event read ahead to tell whether a waiting run has more to show. */
  #lookahead: Promise<IteratorResult<TurnEvent>> | undefined = undefined;
  /** The `start` chunk went out: the client is caught up past `afterSeq`. */
  #sending = false;
  #closed = false;

  constructor(turn: StreamedTurn, options: ToUIMessageStreamOptions) {
    this.#runId = turn.runId;
    this.#events = turn.events;
    this.#translator = new ChunkTranslator(turn);
    this.#afterSeq = options.afterSeq ?? 0;
  }

  /** Sends the chunks of the next event that adds any (or ends the stream). */
  async pull(controller: Controller): Promise<void> {
    const events = this.#openEvents();
    while (!this.#closed) {
      let next: IteratorResult<TurnEvent>;
      try {
        next = await (this.#lookahead ?? events.next());
      } catch (error) {
        if (!this.#closed) controller.error(error);
        this.#closed = true;
        return;
      }
      this.#lookahead = undefined;
      if (this.#closed) return;
      if (next.done) return this.#close(controller);
      const event = next.value;
      const chunks = this.#translator.translate(event);
      this.#startAfterSeq(controller, event);
      if (!this.#sending || chunks.length === 0) continue;
      for (const chunk of chunks) controller.enqueue(chunk);
      const last = chunks.at(-1)?.type;
      if (last === 'finish' || last === 'abort') return this.#close(controller);
      if ('seq' in event && recordedStateHasTag(event.state, 'needsPerson')) {
        await this.#finishIfWaiting(controller, events);
      }
      return;
    }
  }

  /** Lets go of the events (the client went away). */
  cancel(): void {
    this.#release();
  }

  #openEvents(): AsyncIterator<TurnEvent> | Iterator<TurnEvent> {
    const events = this.#events;
    this.#iterator ??=
      Symbol.asyncIterator in events ? events[Symbol.asyncIterator]() : events[Symbol.iterator]();
    return this.#iterator;
  }

  /** Sends `start` at the first fact after `afterSeq`: until it, the client has what the chunks add. */
  #startAfterSeq(controller: Controller, event: TurnEvent): void {
    if (this.#sending || !('seq' in event) || event.runId !== this.#runId) return;
    if (event.seq <= this.#afterSeq) return;
    this.#sending = true;
    const messageMetadata = this.#translator.metadata();
    controller.enqueue({ type: 'start', messageId: this.#runId, messageMetadata });
  }

  /**
   * Caught up with a run that waits for a person: ends the stream with `finish` (reason
   * `tool-calls`) unless the run already moved on; the answers come in a new request.
   */
  async #finishIfWaiting(
    controller: Controller,
    events: AsyncIterator<TurnEvent> | Iterator<TurnEvent>,
  ): Promise<void> {
    // Events already buffered resolve before a timer fires: a decision recorded before this
    // stream started is shown, not mistaken for the wait.
    const ahead = Promise.resolve(events.next());
    this.#lookahead = ahead;
    const moved = await Promise.race([
      ahead.then(
        () => true,
        () => true,
      ),
      new Promise<false>((resolve) => setTimeout(resolve, 0, false)),
    ]);
    if (!moved && !this.#closed) {
      const messageMetadata = this.#translator.metadata();
      controller.enqueue({ type: 'finish', finishReason: 'tool-calls', messageMetadata });
      this.#close(controller);
    }
  }

  /** Lets go of the events; a `next()` still waiting resolves when the run moves on. */
  #release(): void {
    this.#closed = true;
    Promise.resolve(this.#iterator?.return?.()).catch(() => {});
  }

  #close(controller: Controller): void {
    this.#release();
    controller.close();
  }
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
  let messages: TurnlogUIMessage[] = [];
  for (const run of factsByRun(facts)) {
    const first = run[0] as Fact;
    const started = run.find((fact) => fact.type === 'run.started');
    const superseded = started?.type === 'run.started' ? started.regenerates : undefined;
    if (superseded !== undefined) {
      // regenerate(): the same question answered again; the page shows the newer answer only.
      messages = messages.filter((message) => message.id !== superseded);
    } else if (started?.type === 'run.started') {
      messages.push({ id: started.id, role: 'user', parts: userParts(started.input) });
    }
    const translator = new ChunkTranslator(first);
    const message: TurnlogUIMessage = { id: first.runId, role: 'assistant', parts: [] };
    for (const fact of run) foldChunks(message, translator.translate(fact));
    messages.push(message);
  }
  return messages;
}

/** A run's input as the parts of a user message: attached files (as data URLs), then its text. */
function userParts(input: FactOf<'run.started'>['input']): TurnlogUIMessage['parts'] {
  const files = (input.files ?? []).map((file) => ({
    type: 'file' as const,
    mediaType: file.mediaType,
    url: `data:${file.mediaType};base64,${file.data}`,
    ...(file.filename === undefined ? {} : { filename: file.filename }),
  }));
  return [...files, { type: 'text', text: input.text }];
}

/** A log's facts per run, runs in the order they first appear. */
function factsByRun(facts: readonly Fact[]): Iterable<Fact[]> {
  const runs = new Map<string, Fact[]>();
  for (const fact of facts) {
    const key = `${fact.sessionId}\u0000${fact.runId}`;
    const run = runs.get(key) ?? [];
    run.push(fact);
    runs.set(key, run);
  }
  return runs.values();
}
