import type { FinishReason } from '../events/facts.ts';

/**
 * Provider spellings of a finish reason, lower-cased with `-` read as `_`. Used only when the
 * unified reason is ambiguous (`other`, `unknown`).
 */
const rawSpellings: Readonly<Record<string, FinishReason['unified']>> = {
  stop: 'stop',
  end_turn: 'stop',
  stop_sequence: 'stop',
  completed: 'stop',
  complete: 'stop',
  finish: 'stop',
  tool_calls: 'tool-calls',
  tool_call: 'tool-calls',
  tool_use: 'tool-calls',
  function_call: 'tool-calls',
  length: 'length',
  max_tokens: 'length',
  max_output_tokens: 'length',
  content_filter: 'content-filter',
  safety: 'content-filter',
  recitation: 'content-filter',
  refusal: 'content-filter',
  blocklist: 'content-filter',
  prohibited_content: 'content-filter',
  spii: 'content-filter',
  error: 'error',
  malformed_function_call: 'error',
};

/**
 * Resolves an ambiguous finish reason through the provider's own spelling: `{ unified: 'other',
 * raw: 'end_turn' }` becomes `{ unified: 'stop', raw: 'end_turn' }`. A reason that is already
 * specific, or whose raw spelling is unknown, is returned unchanged. The tool-call guard and the
 * adapter's completion both use this one function, so they never disagree.
 *
 * @example
 * resolveFinishReason({ unified: 'other', raw: 'STOP' }); // { unified: 'stop', raw: 'STOP' }
 * resolveFinishReason({ unified: 'other', raw: 'other' }); // { unified: 'other', raw: 'other' }
 */
export function resolveFinishReason(finishReason: FinishReason): FinishReason {
  if (finishReason.unified !== 'other' && finishReason.unified !== 'unknown') return finishReason;
  if (finishReason.raw === undefined) return finishReason;
  const spelling = finishReason.raw.trim().toLowerCase().replaceAll('-', '_');
  const resolved = Object.hasOwn(rawSpellings, spelling) ? rawSpellings[spelling] : undefined;
  return resolved === undefined ? finishReason : { unified: resolved, raw: finishReason.raw };
}

/** True when a finish reason, once resolved, says the model ended its turn on purpose. */
export function isCleanFinish(finishReason: FinishReason): boolean {
  const { unified } = resolveFinishReason(finishReason);
  return unified === 'stop' || unified === 'tool-calls';
}
