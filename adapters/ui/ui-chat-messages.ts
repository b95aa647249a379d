import { createUIMessageStreamResponse, isToolUIPart, validateUIMessages } from 'ai';
import { type ApprovalDecision, decisionFromApproval } from './ui-approval.ts';
import type { TurnlogUIMessage, TurnlogUIMessageChunk } from './ui-message-types.ts';

// What a chat route (http/chat-handler.ts) needs of the AI SDK's UI layer, here so that only
// adapters/ imports the SDK (test/adapters/boundary.test.ts).

/** A UI message stream as the `Response` that `DefaultChatTransport` reads (server-sent events). */
export function uiMessageStreamResponse(stream: ReadableStream<TurnlogUIMessageChunk>): Response {
  return createUIMessageStreamResponse({ stream });
}

/** `useChat`'s `messages`, checked against the AI SDK's UI message schema; throws if they are not. */
export function validTurnlogUIMessages(messages: unknown): Promise<TurnlogUIMessage[]> {
  return validateUIMessages<TurnlogUIMessage>({ messages });
}

/**
 * The approvals a person answered in an assistant message (`addToolApprovalResponse`), as
 * `runtime.decide()` arguments; approvals the policy answered by itself (`isAutomatic`) are left
 * out. Throws `InvalidArgumentError` for an approval turnlog did not request.
 */
export function answeredApprovals(message: TurnlogUIMessage): ApprovalDecision[] {
  const answers: ApprovalDecision[] = [];
  for (const part of message.parts) {
    if (!isToolUIPart(part) || part.state !== 'approval-responded') continue;
    if (part.approval.isAutomatic === true) continue;
    answers.push(decisionFromApproval(part.approval));
  }
  return answers;
}
