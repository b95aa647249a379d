// The one tool-calling conversation every orchestrator in the benchmarks runs: a zero-latency
// scripted model that answers by position (how many tool results its prompt holds), so one model
// instance serves every repetition and every framework, and one `add` tool.
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Prompt,
} from '@ai-sdk/provider';
import { type ScriptedResponse, scriptedModel } from '../adapters/scripted-model.ts';

/** The user message that starts the conversation. */
export const conversationPrompt = 'Add each pair of numbers, one call at a time, then say done.';

/** The tool every side offers: its description and its pure body. */
export const addTool = {
  name: 'add',
  description: 'Adds two numbers.',
  execute: ({ a, b }: { a: number; b: number }) => a + b,
} as const;

/**
 * The response for step `index` (0-based) of a conversation of `steps` steps: a short streamed
 * text and one streamed `add` call, and a final text step without calls.
 */
export function conversationStep(index: number, steps: number): ScriptedResponse {
  const usage = { inputTokens: 120 + index * 40, outputTokens: 18 };
  if (index >= steps - 1) return { text: ['All ', 'pairs ', 'are ', 'added.'], usage };
  return {
    text: ['Adding ', `pair ${index + 1}.`],
    // Call ids are unique per conversation, as providers make them.
    toolCalls: [{ id: `call_${index + 1}`, name: addTool.name, input: { a: index, b: index + 1 } }],
    usage,
  };
}

/**
 * How many tool results the prompt carries since its last user message: the number of steps
 * this turn has completed (earlier turns of the session do not count). Read from the end back
 * to that user message, so the scripted model's own cost does not grow with the session's
 * history; `BENCH_PROMPT_SCAN=forward` reads the whole prompt from the start instead (the model
 * of the runs before, same answer), to measure how much of a long session's step that scan is.
 */
export function completedSteps(prompt: LanguageModelV4Prompt): number {
  return forwardScan ? completedStepsForward(prompt) : completedStepsBackward(prompt);
}

const forwardScan = process.env.BENCH_PROMPT_SCAN === 'forward';

function completedStepsBackward(prompt: LanguageModelV4Prompt): number {
  let results = 0;
  for (let index = prompt.length - 1; index >= 0; index -= 1) {
    const message = prompt[index] as LanguageModelV4Prompt[number];
    if (message.role === 'user') break;
    if (message.role !== 'tool') continue;
    for (const part of message.content) if (part.type === 'tool-result') results += 1;
  }
  return results;
}

function completedStepsForward(prompt: LanguageModelV4Prompt): number {
  let results = 0;
  for (const message of prompt) {
    if (message.role === 'user') results = 0;
    if (message.role !== 'tool') continue;
    for (const part of message.content) if (part.type === 'tool-result') results += 1;
  }
  return results;
}

/**
 * An AI SDK language model (spec v4) that plays the conversation of `steps` steps. It keeps no
 * state: each request plays a one-step `scriptedModel` chosen by `completedSteps(prompt)`.
 */
export function conversationModel(steps: number): LanguageModelV4 {
  const respond = (call: LanguageModelV4CallOptions) =>
    scriptedModel([conversationStep(completedSteps(call.prompt), steps)], {
      provider: 'bench',
      modelId: 'conversation',
    });
  return {
    specificationVersion: 'v4',
    provider: 'bench',
    modelId: 'conversation',
    supportedUrls: {},
    doStream: (call) => respond(call).doStream(call),
    doGenerate: (call) => respond(call).doGenerate(call),
  };
}
