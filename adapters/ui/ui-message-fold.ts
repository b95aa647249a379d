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

type Chunk = TurnlogUIMessageChunk;
/** The chunks of the given types. */
type ChunkOf<TType extends Chunk['type']> = Extract<Chunk, { type: TType }>;

/**
 * Applies chunks to an assistant message the way the AI SDK's `readUIMessageStream` does (for
 * the chunks turnlog's translator sends), synchronously: `toUIMessages` builds messages with it.
 * The tests check it against the SDK's own reader.
 */
export function foldChunks(message: TurnlogUIMessage, chunks: readonly Chunk[]): void {
  const fold = new MessageFold(message);
  for (const chunk of chunks) fold.apply(chunk);
}

/** One `foldChunks` call: the message, its parts, and the text and reasoning parts still open. */
class MessageFold {
  readonly #message: TurnlogUIMessage;
  readonly #parts: Part[];
  readonly #open = new Map<string, { text: string; state?: string }>();

  constructor(message: TurnlogUIMessage) {
    this.#message = message;
    this.#parts = message.parts as Part[];
  }

  /** Applies one chunk to the message. */
  apply(chunk: Chunk): void {
    switch (chunk.type) {
      case 'text-start':
      case 'reasoning-start':
        this.#startTextPart(chunk);
        break;
      case 'text-delta':
      case 'reasoning-delta': {
        const part = this.#open.get(chunk.id);
        if (part !== undefined) part.text += chunk.delta;
        break;
      }
      case 'text-end':
      case 'reasoning-end': {
        const part = this.#open.get(chunk.id);
        if (part !== undefined) part.state = 'done';
        this.#open.delete(chunk.id);
        break;
      }
      case 'tool-input-start':
      case 'tool-input-available':
        this.#setToolInput(chunk);
        break;
      case 'tool-input-delta':
        // The input streams as text; the part shows the value once `tool-input-available` says.
        break;
      case 'tool-approval-request':
        this.#requestApproval(chunk);
        break;
      case 'tool-approval-response':
        this.#respondApproval(chunk);
        break;
      case 'tool-output-available':
      case 'tool-output-error':
      case 'tool-output-denied':
        this.#setToolOutput(chunk);
        break;
      case 'data-decision':
      case 'data-reconciled':
        this.#setData(chunk);
        break;
      case 'steering-message':
        this.#parts.push({ type: 'steering-message', id: chunk.id, parts: chunk.parts });
        break;
      case 'start-step':
        this.#parts.push({ type: 'step-start' });
        break;
      case 'reset-step':
        this.#parts.splice(this.#stepStart() + 1);
        this.#open.clear();
        break;
      case 'start':
      case 'finish':
      case 'message-metadata':
        if (chunk.messageMetadata !== undefined) {
          this.#message.metadata = { ...this.#message.metadata, ...chunk.messageMetadata };
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

  #startTextPart(chunk: ChunkOf<'text-start' | 'reasoning-start'>): void {
    const part =
      chunk.type === 'text-start'
        ? { type: 'text' as const, text: '', state: 'streaming' as const }
        : { type: 'reasoning' as const, id: chunk.id, text: '', state: 'streaming' as const };
    this.#open.set(chunk.id, part);
    this.#parts.push(part);
  }

  /** The call's part in the current step takes the input; else a new part does. */
  #setToolInput(chunk: ChunkOf<'tool-input-start' | 'tool-input-available'>): void {
    const existing = this.#toolPart(chunk.toolCallId);
    const state = chunk.type === 'tool-input-start' ? 'input-streaming' : 'input-available';
    const input = chunk.type === 'tool-input-start' ? undefined : chunk.input;
    const provider = {
      ...(chunk.providerExecuted === undefined ? {} : { providerExecuted: chunk.providerExecuted }),
      ...(chunk.providerMetadata === undefined
        ? {}
        : { callProviderMetadata: chunk.providerMetadata }),
    };
    // A title and tool metadata stay once set, as the SDK's reader keeps them.
    const described = {
      ...('title' in chunk && chunk.title !== undefined ? { title: chunk.title } : {}),
      ...('toolMetadata' in chunk && chunk.toolMetadata !== undefined
        ? { toolMetadata: chunk.toolMetadata }
        : {}),
    };
    if (existing !== undefined && this.#parts.indexOf(existing) > this.#stepStart()) {
      Object.assign(
        existing,
        { type: `tool-${chunk.toolName}`, state, input },
        provider,
        described,
      );
    } else {
      this.#parts.push({
        type: `tool-${chunk.toolName}`,
        toolCallId: chunk.toolCallId,
        state,
        input,
        ...provider,
        ...described,
      } as Part);
    }
  }

  #requestApproval(chunk: ChunkOf<'tool-approval-request'>): void {
    const part = this.#toolPart(chunk.toolCallId);
    if (part === undefined) return;
    part.state = 'approval-requested';
    part.approval = {
      id: chunk.approvalId,
      ...(chunk.approvalDescriptor === undefined ? {} : { descriptor: chunk.approvalDescriptor }),
      ...(chunk.reason === undefined ? {} : { requestReason: chunk.reason }),
      ...(chunk.isAutomatic === true ? { isAutomatic: true } : {}),
    };
  }

  #respondApproval(chunk: ChunkOf<'tool-approval-response'>): void {
    const part = this.#parts.find(
      (candidate) => isTool(candidate) && candidate.approval?.id === chunk.approvalId,
    ) as ToolPart | undefined;
    if (part === undefined) return;
    part.state = 'approval-responded';
    part.approval = {
      ...part.approval,
      id: chunk.approvalId,
      approved: chunk.approved,
      ...(chunk.reason === undefined ? {} : { reason: chunk.reason }),
    };
  }

  #setToolOutput(
    chunk: ChunkOf<'tool-output-available' | 'tool-output-error' | 'tool-output-denied'>,
  ): void {
    const part = this.#toolPart(chunk.toolCallId);
    if (part === undefined) return;
    if (chunk.type === 'tool-output-denied') {
      part.state = 'output-denied';
      return;
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
  }

  /** A data part with the chunk's id takes its data; else the chunk is a new part. */
  #setData(chunk: ChunkOf<'data-decision' | 'data-reconciled'>): void {
    const existing = this.#parts.find(
      (part) => part.type === chunk.type && 'id' in part && part.id === chunk.id,
    );
    if (existing !== undefined) (existing as { data: unknown }).data = chunk.data;
    else this.#parts.push({ type: chunk.type, id: chunk.id, data: chunk.data } as Part);
  }

  /** The index of the current step's `step-start` part (-1 before the first). */
  #stepStart(): number {
    return this.#parts.findLastIndex((part) => part.type === 'step-start');
  }

  /** The call's tool part: in the current step if it has one, else the call's last part. */
  #toolPart(toolCallId: string): ToolPart | undefined {
    const parts = this.#parts;
    const inStep = parts
      .slice(this.#stepStart() + 1)
      .find((part) => isTool(part) && part.toolCallId === toolCallId);
    return (inStep ?? parts.findLast((part) => isTool(part) && part.toolCallId === toolCallId)) as
      | ToolPart
      | undefined;
  }
}

function isTool(part: Part): part is ToolPart {
  return part.type.startsWith('tool-');
}
