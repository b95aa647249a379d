// The LangGraph.js side of the benchmarks: the agent graph as LangGraph users write it (a model
// node, a prebuilt ToolNode, toolsCondition between them, MessagesAnnotation state), over a chat
// model that wraps the same AI SDK scripted model every other side calls.
import type {
  LanguageModelV4,
  LanguageModelV4FunctionTool,
  LanguageModelV4Message,
  LanguageModelV4Prompt,
} from '@ai-sdk/provider';
import {
  BaseChatModel,
  type BaseChatModelCallOptions,
  type BindToolsInput,
} from '@langchain/core/language_models/chat_models';
import { AIMessage, type BaseMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';
import { tool } from '@langchain/core/tools';
import { toJsonSchema } from '@langchain/core/utils/json_schema';
import {
  type BaseCheckpointSaver,
  END,
  MessagesAnnotation,
  START,
  StateGraph,
} from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';
import { addTool, conversationPrompt } from './conversation.ts';

interface ScriptedChatCallOptions extends BaseChatModelCallOptions {
  tools?: LanguageModelV4FunctionTool[];
}

/**
 * A LangChain chat model over an AI SDK language model: it converts the messages to the
 * provider prompt, makes one `doStream` call, reads the whole stream and answers one AIMessage,
 * as a provider integration (ChatOpenAI, …) does with its HTTP stream.
 */
export class ScriptedChatModel extends BaseChatModel<ScriptedChatCallOptions> {
  readonly #model: LanguageModelV4;

  constructor(model: LanguageModelV4) {
    super({});
    this.#model = model;
  }

  _llmType(): string {
    return 'turnlog-bench-scripted';
  }

  override bindTools(tools: BindToolsInput[]) {
    const definitions = tools.map((candidate): LanguageModelV4FunctionTool => {
      const structured = candidate as { name: string; description?: string; schema: never };
      return {
        type: 'function',
        name: structured.name,
        description: structured.description,
        inputSchema: toJsonSchema(structured.schema) as LanguageModelV4FunctionTool['inputSchema'],
      };
    });
    return this.withConfig({ tools: definitions });
  }

  async _generate(
    messages: BaseMessage[],
    options: this['ParsedCallOptions'],
  ): Promise<ChatResult> {
    const { stream } = await this.#model.doStream({
      prompt: toPrompt(messages),
      ...(options.tools === undefined ? {} : { tools: options.tools }),
      ...(options.signal === undefined ? {} : { abortSignal: options.signal }),
    });
    let text = '';
    const toolCalls: {
      id: string;
      name: string;
      args: Record<string, unknown>;
      type: 'tool_call';
    }[] = [];
    let usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };
    for await (const part of stream) {
      if (part.type === 'text-delta') text += part.delta;
      else if (part.type === 'tool-call') {
        toolCalls.push({
          id: part.toolCallId,
          name: part.toolName,
          args: JSON.parse(part.input),
          type: 'tool_call',
        });
      } else if (part.type === 'finish') {
        const input = part.usage.inputTokens.total ?? 0;
        const output = part.usage.outputTokens.total ?? 0;
        usage = { input_tokens: input, output_tokens: output, total_tokens: input + output };
      } else if (part.type === 'error') throw part.error;
    }
    const message = new AIMessage({ content: text, tool_calls: toolCalls, usage_metadata: usage });
    return { generations: [{ text, message }] };
  }
}

/** LangChain messages → the AI SDK provider prompt (the conversion a provider wrapper does). */
function toPrompt(messages: BaseMessage[]): LanguageModelV4Prompt {
  return messages.map((message): LanguageModelV4Message => {
    const text = typeof message.content === 'string' ? message.content : message.text;
    switch (message.type) {
      case 'system':
        return { role: 'system', content: text };
      case 'human':
        return { role: 'user', content: [{ type: 'text', text }] };
      case 'ai': {
        const calls = (message as AIMessage).tool_calls ?? [];
        return {
          role: 'assistant',
          content: [
            ...(text === '' ? [] : [{ type: 'text' as const, text }]),
            ...calls.map((call) => ({
              type: 'tool-call' as const,
              toolCallId: call.id ?? '',
              toolName: call.name,
              input: call.args,
            })),
          ],
        };
      }
      case 'tool': {
        const result = message as BaseMessage & { tool_call_id: string; name?: string };
        return {
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: result.tool_call_id,
              toolName: result.name ?? '',
              output: { type: 'text', value: text },
            },
          ],
        };
      }
      default:
        throw new Error(`ScriptedChatModel: unexpected ${message.type} message`);
    }
  });
}

/** The `add` tool as a LangChain tool. */
export const langGraphAddTool = tool(({ a, b }) => String(addTool.execute({ a, b })), {
  name: addTool.name,
  description: addTool.description,
  schema: z.object({ a: z.number(), b: z.number() }),
});

/**
 * Compiles the agent graph: `agent` (the model with the tools bound) → `tools` while the last
 * message has tool calls → back to `agent`; END otherwise.
 */
export function agentGraph(options: { model: LanguageModelV4; checkpointer: BaseCheckpointSaver }) {
  const model = new ScriptedChatModel(options.model).bindTools([langGraphAddTool]);
  return new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode('tools', new ToolNode([langGraphAddTool]))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', toolsCondition, ['tools', END])
    .addEdge('tools', 'agent')
    .compile({ checkpointer: options.checkpointer });
}

export type AgentGraph = ReturnType<typeof agentGraph>;

/**
 * Runs the conversation on a new thread to its end and checks it ran every step: one human
 * message, then an AI message and a tool message per tool step, then the final AI message.
 */
export async function runAgentGraph(options: {
  graph: AgentGraph;
  threadId: string;
  steps: number;
  durability: 'async' | 'sync';
}): Promise<void> {
  const state = await options.graph.invoke(
    { messages: [{ role: 'user', content: conversationPrompt }] },
    {
      configurable: { thread_id: options.threadId },
      // Each model step is two supersteps (agent, tools); the default limit of 25 is too low.
      recursionLimit: options.steps * 2 + 10,
      durability: options.durability,
    },
  );
  const expected = 1 + 2 * (options.steps - 1) + 1;
  if (state.messages.length !== expected) {
    throw new Error(
      `LangGraph run ${options.threadId}: ${state.messages.length} messages, expected ${expected}`,
    );
  }
}
