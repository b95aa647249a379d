import type { ContentPart, Fact } from '../../events/facts.ts';
import type { PreparedRequest } from './actor-inputs.ts';

/** Characters per token, the rough rule the estimate uses. */
const charsPerToken = 4;

/**
 * Estimates a request's input tokens (DESIGN, compaction): the last step's reported input
 * tokens plus the characters added to the history since that step, ÷ 4. Without a reported
 * step since the last compaction, all of the request's characters ÷ 4.
 */
export function estimateRequestTokens(facts: readonly Fact[], request: PreparedRequest): number {
  let lastIndex = -1;
  for (let index = facts.length - 1; index >= 0; index -= 1) {
    const fact = facts[index];
    if (fact?.type === 'compaction.completed') break;
    if (fact?.type === 'step.completed' && fact.usage.inputTokens !== undefined) {
      lastIndex = index;
      break;
    }
  }
  const last = facts[lastIndex];
  if (last?.type !== 'step.completed' || last.usage.inputTokens === undefined) {
    const characters =
      JSON.stringify(request.messages).length +
      (request.system?.length ?? 0) +
      JSON.stringify(request.tools).length;
    return Math.ceil(characters / charsPerToken);
  }
  let added = 0;
  added += contentChars(last.content);
  for (const call of last.toolCalls) added += JSON.stringify(call.input).length;
  for (const fact of facts.slice(lastIndex + 1)) {
    if (fact.type === 'tool.settled') added += fact.text.length;
    else if (fact.type === 'steering.received') added += fact.text.length;
    else if (fact.type === 'run.started') added += fact.input.text.length;
    else if (fact.type === 'step.completed') {
      added += contentChars(fact.content);
    }
  }
  return last.usage.inputTokens + Math.ceil(added / charsPerToken);
}

/** Characters a step's content adds to the history (a provider tool's parts as their JSON). */
function contentChars(content: readonly ContentPart[]): number {
  let characters = 0;
  for (const part of content) {
    characters += 'text' in part ? part.text.length : JSON.stringify(part).length;
  }
  return characters;
}

/** Tokens kept free for the answer when deciding whether to compact. */
export function outputReserve(maxOutputTokens: number | undefined): number {
  return maxOutputTokens ?? 4_096;
}
