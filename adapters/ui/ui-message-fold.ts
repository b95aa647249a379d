import type { UIMessagePart } from 'ai';
import { assertNever } from '../../events/facts.ts';
import type {
  TurnlogDataTypes,
  TurnlogUIMessage,
  TurnlogUIMessageChunk,
} from './ui-message-types.ts';

type Part = UIMessagePart<TurnlogDataTypes, Record<string, never>>;
type ToolPart = Extract<Part, { toolCallId: string }> & {
  state: string;
  approval?: Record<string, unknown>;
  [key: string]: unknown;
};

/**
 * Applies chunks to an assistant message the way the AI SDK's `readUIMessageStream` does (for
 * the chunks turnlog's translator sends), synchronously: `toUIMessages` builds messages with it.
 * The tests check it against the SDK's own reader.
 */
export function foldChunks(
  message: TurnlogUIMessage,
  chunks: readonly TurnlogUIMessageChunk[],
): void {
  const parts = message.parts as Part[];
  const open = new Map<string, { text: string; state?: string }>();

  const stepStart = () => parts.findLastIndex((part) => part.type === 'step-start');
  const isTool = (part: Part): part is ToolPart => part.type.startsWith('tool-');
  const toolPart = (toolCallId: string): ToolPart | undefined => {
    const inStep = parts
      .slice(stepStart() + 1)
      .find((part) => isTool(part) && part.toolCallId === toolCallId);
    return (inStep ?? parts.findLast((part) => isTool(part) && part.toolCallId === toolCallId)) as
      | ToolPart
      | undefined;
  };

  for (const chunk of chunks) {
    switch (chunk.type) {
      case 'text-start':
      case 'reasoning-start': {
        const part =
          chunk.type === 'text-start'
            ? { type: 'text' as const, text: '', state: 'streaming' as const }
            : { type: 'reasoning' as const, id: chunk.id, text: '', state: 'streaming' as const };
        open.set(chunk.id, part);
        parts.push(part);
        break;
      }
      case 'text-delta':
      case 'reasoning-delta': {
        const part = open.get(chunk.id);
        if (part !== undefined) part.text += chunk.delta;
        break;
      }
      case 'text-end':
      case 'reasoning-end': {
        const part = open.get(chunk.id);
        if (part !== undefined) part.state = 'done';
        open.delete(chunk.id);
        break;
      }
      case 'tool-input-start':
      case 'tool-input-available': {
        const existing = toolPart(chunk.toolCallId);
        const state = chunk.type === 'tool-input-start' ? 'input-streaming' : 'input-available';
        const input = chunk.type === 'tool-input-start' ? undefined : chunk.input;
        const provider = {
          ...(chunk.providerExecuted === undefined
            ? {}
            : { providerExecuted: chunk.providerExecuted }),
          ...(chunk.providerMetadata === undefined
            ? {}
            : { callProviderMetadata: chunk.providerMetadata }),
        };
        if (existing !== undefined && parts.indexOf(existing) > stepStart()) {
          Object.assign(existing, { type: `tool-${chunk.toolName}`, state, input }, provider);
        } else {
          parts.push({
            type: `tool-${chunk.toolName}`,
            toolCallId: chunk.toolCallId,
            state,
            input,
            ...provider,
          } as Part);
        }
        break;
      }
      case 'tool-input-delta':
        // The input streams as text; the part shows the value once `tool-input-available` says.
        break;
      case 'tool-approval-request': {
        const part = toolPart(chunk.toolCallId);
        if (part === undefined) break;
        part.state = 'approval-requested';
        part.approval = {
          id: chunk.approvalId,
          ...(chunk.reason === undefined ? {} : { requestReason: chunk.reason }),
          ...(chunk.isAutomatic === true ? { isAutomatic: true } : {}),
        };
        break;
      }
      case 'tool-approval-response': {
        const part = parts.find(
          (candidate) => isTool(candidate) && candidate.approval?.id === chunk.approvalId,
        ) as ToolPart | undefined;
        if (part === undefined) break;
        part.state = 'approval-responded';
        part.approval = {
          ...part.approval,
          id: chunk.approvalId,
          approved: chunk.approved,
          ...(chunk.reason === undefined ? {} : { reason: chunk.reason }),
        };
        break;
      }
      case 'tool-output-available':
      case 'tool-output-error':
      case 'tool-output-denied': {
        const part = toolPart(chunk.toolCallId);
        if (part === undefined) break;
        if (chunk.type === 'tool-output-denied') {
          part.state = 'output-denied';
          break;
        }
        if (chunk.type === 'tool-output-available') {
          Object.assign(part, { state: 'output-available', output: chunk.output });
        } else {
          Object.assign(part, { state: 'output-error', errorText: chunk.errorText });
        }
        if (chunk.providerExecuted !== undefined) part.providerExecuted = chunk.providerExecuted;
        if (chunk.providerMetadata !== undefined) {
          part.resultProviderMetadata = chunk.providerMetadata;
        }
        break;
      }
      case 'data-decision': {
        const existing = parts.find(
          (part) => part.type === chunk.type && 'id' in part && part.id === chunk.id,
        );
        if (existing !== undefined) (existing as { data: unknown }).data = chunk.data;
        else parts.push({ type: chunk.type, id: chunk.id, data: chunk.data } as Part);
        break;
      }
      case 'steering-message':
        parts.push({ type: 'steering-message', id: chunk.id, parts: chunk.parts });
        break;
      case 'start-step':
        parts.push({ type: 'step-start' });
        break;
      case 'reset-step':
        parts.splice(stepStart() + 1);
        open.clear();
        break;
      case 'start':
      case 'finish':
      case 'message-metadata':
        if (chunk.messageMetadata !== undefined) {
          message.metadata = { ...message.metadata, ...chunk.messageMetadata };
        }
        break;
      case 'finish-step':
      case 'error':
      case 'abort':
        break;
      case 'custom':
      case 'file':
      case 'reasoning-file':
      case 'source-url':
      case 'source-document':
      case 'tool-input-error':
        throw new Error(`foldChunks: turnlog never sends a ${chunk.type} chunk`);
      default:
        assertNever(chunk, 'UI message chunk');
    }
  }
}
