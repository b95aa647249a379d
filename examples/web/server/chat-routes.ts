// The routes a `useChat` page talks to, with the AI SDK's default transport (`/api/chat`):
//   POST /api/chat                 { id, messages, trigger }  → UI message stream of the run
//   GET  /api/chat/:id/stream                                 → the unfinished run replayed, then live (204: none)
//   GET  /api/chat/:id/messages                               → the session as UI messages, from the log
//   GET  /api/chat/:id/moved?after=N                          → { seq } once the unfinished run records a fact after N (204: none)
// The chat id is the session id. A user message starts a run; an assistant message that answers
// approvals records the decisions and continues the run's message. Nothing but the log is kept:
// a client that reconnects gets the run rebuilt from the log and then its live tail.
import { createUIMessageStreamResponse, isToolUIPart, validateUIMessages } from 'ai';
import {
  decisionFromApproval,
  NoActiveRunError,
  type Runtime,
  type TurnHandle,
  type TurnlogUIMessage,
  toUIMessageStream,
  toUIMessages,
} from '../../../index.ts';
import { HttpError } from '../../http-error.ts';

/** Keeps a run's handle in `turns` while the run is unfinished. */
export function track(turns: Map<string, TurnHandle>, turn: TurnHandle): void {
  turns.set(turn.sessionId, turn);
  const forget = () => {
    if (turns.get(turn.sessionId) === turn) turns.delete(turn.sessionId);
  };
  turn.done.then(forget, forget);
}

/**
 * The chat routes over a runtime. `turns` holds the handle of each session's unfinished run
 * (from `send()` or `recover()`): a stream replays it from `run.started`, then follows it.
 */
export function createChatRoutes(runtime: Runtime, turns: Map<string, TurnHandle>) {
  return {
    /** `POST /api/chat`: the body `useChat` sends. */
    async post(body: Record<string, unknown>): Promise<Response> {
      const { id, trigger } = body;
      if (typeof id !== 'string' || id === '') {
        throw new HttpError(400, 'BadRequest', 'The body needs "id", the chat (session) id.');
      }
      if (trigger === 'regenerate-message') {
        throw new HttpError(
          400,
          'BadRequest',
          'A run in the log is never rewritten; send a new message instead of regenerating.',
        );
      }
      let messages: TurnlogUIMessage[];
      try {
        messages = await validateUIMessages<TurnlogUIMessage>({ messages: body.messages });
      } catch (error) {
        throw new HttpError(
          400,
          'BadRequest',
          `"messages" are not valid UI messages: ${(error as Error).message}`,
        );
      }
      const last = messages.at(-1) as TurnlogUIMessage;
      if (last.role === 'user') {
        const text = last.parts
          .flatMap((part) => (part.type === 'text' ? [part.text] : []))
          .join('\n');
        // SessionBusyError (409) while the session's run is unfinished.
        const turn = await runtime.send({ sessionId: id, text });
        track(turns, turn);
        return createUIMessageStreamResponse({ stream: toUIMessageStream(turn) });
      }
      const answers = last.parts.flatMap((part) =>
        isToolUIPart(part) &&
        part.state === 'approval-responded' &&
        part.approval.isAutomatic !== true
          ? [part.approval]
          : [],
      );
      if (answers.length === 0) {
        throw new HttpError(
          400,
          'BadRequest',
          'The last message answers no approval; send a user message.',
        );
      }
      // I5: each decision is bound to the input hash its approval was requested for.
      for (const approval of answers) {
        await runtime.decide({ sessionId: id, ...decisionFromApproval(approval) });
      }
      const turn = turns.get(id);
      if (turn === undefined) {
        throw new NoActiveRunError({
          message: `Session ${id} has no unfinished run to continue.`,
          sessionId: id,
        });
      }
      const afterSeq = last.metadata?.seq;
      return createUIMessageStreamResponse({
        stream: toUIMessageStream(turn, afterSeq === undefined ? {} : { afterSeq }),
      });
    },

    /** `GET /api/chat/:id/stream`: what `resumeStream()` asks for. */
    resume(sessionId: string): Response {
      const turn = turns.get(sessionId);
      if (turn === undefined) return new Response(null, { status: 204 });
      return createUIMessageStreamResponse({ stream: toUIMessageStream(turn) });
    },

    /**
     * `GET /api/chat/:id/moved?after=N`: a long poll that answers `{ seq }` once the session's
     * unfinished run records a fact after `N` — a decision made on another page or through
     * `/sessions/:id/decisions`, a stop — and 204 at once when it has no unfinished run. A page
     * whose run waits for a person holds one open and, when it answers, resumes the stream.
     */
    moved(sessionId: string, after: number): Response {
      const turn = turns.get(sessionId);
      if (turn === undefined) return new Response(null, { status: 204 });
      const events = turn.events[Symbol.asyncIterator]();
      let released = false;
      const release = () => {
        released = true;
        Promise.resolve(events.return?.()).catch(() => {});
      };
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          // The handle replays the run from run.started, then waits for its next event.
          for (let next = await events.next(); !next.done; next = await events.next()) {
            if (released) return;
            const event = next.value;
            if ('seq' in event && event.seq > after) {
              controller.enqueue(new TextEncoder().encode(JSON.stringify({ seq: event.seq })));
              break;
            }
          }
          if (released) return;
          release();
          controller.close();
        },
        // The page left (or answered itself): the run goes on; only this wait ends.
        cancel: release,
      });
      return new Response(body, { headers: { 'content-type': 'application/json' } });
    },

    /** `GET /api/chat/:id/messages`: the initial messages of a chat page. */
    async messages(sessionId: string): Promise<TurnlogUIMessage[]> {
      return toUIMessages(await runtime.facts(sessionId));
    },
  };
}
