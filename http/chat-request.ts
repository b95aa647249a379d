import type { ApprovalDecision } from '../adapters/ui/ui-approval.ts';
import { answeredApprovals, validTurnlogUIMessages } from '../adapters/ui/ui-chat-messages.ts';
import type { TurnlogUIMessage } from '../adapters/ui/ui-message-types.ts';
import { HttpRefusedError } from './http-errors.ts';

/**
 * What one `POST` of `DefaultChatTransport` asks for, read from useChat's body
 * (`{ id, messages, trigger, messageId }`):
 *
 * - `message`: the last message is the user's: a new run with its content;
 * - `answers`: the last message is the assistant's, with approvals a person answered
 *   (`addToolApprovalResponse`): record the decisions, then continue the run's message after
 *   `afterSeq` (the `seq` of its metadata);
 * - `regenerate`: `regenerate()` of the last answer: a new run with the same user message, that
 *   supersedes the answer it replaces (`runId`).
 */
export type ChatPost =
  | { kind: 'message'; chatId: string; message: TurnlogUIMessage }
  | {
      kind: 'answers';
      chatId: string;
      answers: ApprovalDecision[];
      runId: string | undefined;
      afterSeq: number | undefined;
    }
  | {
      kind: 'regenerate';
      chatId: string;
      message: TurnlogUIMessage;
      messageId: string | undefined;
    };

/** A 400 for a body that is not what `DefaultChatTransport` sends (the trust layer's refusal). */
export function badRequest(message: string): HttpRefusedError {
  return new HttpRefusedError({ reason: 'bad-request', message });
}

/** Reads useChat's body into what it asks for; a 400 `HttpRefusedError` for anything else. */
export async function readChatPost(body: unknown): Promise<ChatPost> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw badRequest('The body must be a JSON object: { id, messages, trigger }.');
  }
  const { id, trigger, messageId } = body as Record<string, unknown>;
  if (typeof id !== 'string' || id === '') {
    throw badRequest('The body needs "id", the chat id (a non-empty string).');
  }
  if (trigger !== undefined && trigger !== 'submit-message' && trigger !== 'regenerate-message') {
    throw badRequest(
      `"trigger" must be submit-message or regenerate-message, not ${JSON.stringify(trigger)}.`,
    );
  }
  let messages: TurnlogUIMessage[];
  try {
    messages = await validTurnlogUIMessages((body as Record<string, unknown>).messages);
  } catch (error) {
    throw badRequest(`"messages" are not valid UI messages: ${(error as Error).message}`);
  }
  const last = messages.at(-1) as TurnlogUIMessage;
  if (trigger === 'regenerate-message') {
    if (last.role !== 'user') {
      throw badRequest(
        'regenerate() sends the messages up to a user message; the last one is not.',
      );
    }
    return {
      kind: 'regenerate',
      chatId: id,
      message: last,
      messageId: typeof messageId === 'string' ? messageId : undefined,
    };
  }
  if (last.role === 'user') return { kind: 'message', chatId: id, message: last };
  return { kind: 'answers', chatId: id, ...answersOf(last) };
}

/** The decisions a person answered in an assistant message (never the policy's). */
function answersOf(message: TurnlogUIMessage) {
  let answers: ReturnType<typeof answeredApprovals>;
  try {
    answers = answeredApprovals(message);
  } catch (error) {
    throw badRequest((error as Error).message);
  }
  if (answers.length === 0) {
    throw badRequest('The last message answers no approval; send a user message.');
  }
  const runId = message.metadata?.runId ?? message.id;
  return { answers, runId, afterSeq: message.metadata?.seq };
}

/**
 * The files attached to a user message (`sendMessage({ files })` makes them data URLs), as
 * `runtime.send()` takes them; a file by URL is refused (400): the log keeps what the model saw.
 */
export function filesOf(message: TurnlogUIMessage) {
  const files: { mediaType: string; data: string; filename?: string }[] = [];
  for (const part of message.parts) {
    if (part.type !== 'file') continue;
    const match = /^data:([^;,]*)(?:;[^,]*)?;base64,(.*)$/s.exec(part.url);
    if (match === null) {
      throw badRequest(
        `Attach files as base64 data URLs (useChat's sendMessage({ files }) makes them), not ${part.url.slice(0, 40)}.`,
      );
    }
    const filename = part.filename === undefined ? {} : { filename: part.filename };
    files.push({ mediaType: part.mediaType, data: match[2] as string, ...filename });
  }
  return files.length === 0 ? undefined : files;
}

/** The text of a user message: its text parts, one per line. */
export function textOf(message: TurnlogUIMessage): string {
  return message.parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
}
