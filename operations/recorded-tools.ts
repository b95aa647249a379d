import type { Fact, FactOf } from '../events/facts.ts';
import type { RuntimeTools } from '../tools/provider-tool.ts';
import { settlementText } from '../tools/settlement-text.ts';
import type { Tool } from '../tools/tool.ts';

/**
 * The runtime's tools with each own tool's `execute` replaced by what the recorded call
 * returned: its stored `output` (or its text), or, for a call that failed, an error with the
 * recorded message. A call the recording never ran fails and is listed in `unrecorded`.
 * Provider tools are kept as they are (the provider runs them; a replay never sends them).
 * Schemas, permissions, secrets and timeouts stay the current tools': they are what is tested.
 */
export function recordedTools(
  tools: RuntimeTools,
  runFacts: readonly Fact[],
): { tools: RuntimeTools; unrecorded: string[] } {
  const settled = new Map<string, FactOf<'tool.settled'>>();
  const started = new Set<string>();
  for (const fact of runFacts) {
    if (fact.type === 'tool.started') started.add(fact.callId);
    if (fact.type === 'tool.settled' && !settled.has(fact.callId)) settled.set(fact.callId, fact);
  }
  const unrecorded: string[] = [];
  const replaced: RuntimeTools = {};
  for (const [name, tool] of Object.entries(tools)) {
    if (!('execute' in tool)) {
      replaced[name] = tool;
      continue;
    }
    const own = tool as Tool;
    replaced[name] = {
      ...own,
      execute: (_input: unknown, context: { callId: string }) => {
        const recorded = settled.get(context.callId);
        if (!started.has(context.callId) || recorded === undefined) {
          unrecorded.push(context.callId);
          throw new Error('replay: this call did not run in the recording');
        }
        if (recorded.outcome === 'success') return recorded.output ?? recorded.text;
        throw new Error(thrownMessage(recorded.text));
      },
    } as Tool;
  }
  return { tools: replaced, unrecorded };
}

/** The message a failed call's text was made from (`settlementText.failed`), else the text. */
function thrownMessage(text: string): string {
  const [prefix = '', suffix = ''] = settlementText.failed('\u0000').split('\u0000');
  return text.startsWith(prefix) && text.endsWith(suffix)
    ? text.slice(prefix.length, text.length - suffix.length)
    : text;
}
