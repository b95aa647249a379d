import { assertNever, type FinishReason, type ProviderFailure } from '../events/facts.ts';
import { streamInterruptedFailure } from './provider-error.ts';

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

/**
 * What a step's finish means for the step: `undefined` when the response ended in a way a run
 * can use (`stop`, `tool-calls`, `length`, `content-filter`), else the failure it is. Only these
 * four say how the answer ended; every other finish is never a completed step, so a cut-off
 * answer never ends a run `completed`, and the step is retried only when nothing had streamed
 * (I9):
 * - `error`, `interrupted`: the provider package saw the response break → `stream_interrupted`
 *   (Gemini's `MALFORMED_FUNCTION_CALL`: `malformed_tool_call`, not retryable);
 * - `other`/`unknown` without a provider reason: the package made the finish up because the body
 *   ended without one (DeepSeek, Cohere, xAI, Open Responses, Anthropic) → `stream_interrupted`;
 * - `other`/`unknown` with a reason no spelling resolves → `unknown`, retryable.
 *
 * A definite reason without a raw spelling (`{ unified: 'stop', raw: undefined }`) is complete:
 * the Responses APIs (OpenAI, Open Responses) report every successful response that way.
 *
 * @example
 * finishFailure({ unified: 'stop', raw: 'end_turn' }); // undefined
 * finishFailure({ unified: 'other', raw: undefined }); // { kind: 'stream_interrupted', retryable: true, … }
 */
export function finishFailure(finishReason: FinishReason): ProviderFailure | undefined {
  const { unified, raw } = resolveFinishReason(finishReason);
  const spelling = raw === undefined ? '' : ` (provider reason "${raw}")`;
  switch (unified) {
    case 'stop':
    case 'tool-calls':
    case 'length':
    case 'content-filter':
      return undefined;
    case 'error':
    case 'interrupted':
      if (raw?.toUpperCase() === 'MALFORMED_FUNCTION_CALL') {
        return {
          kind: 'malformed_tool_call',
          retryable: false,
          message: `The provider rejected the model's tool call as malformed${spelling}.`,
        };
      }
      return streamInterruptedFailure(
        `The provider stream ended with finish reason "${unified}"${spelling}.`,
      );
    case 'other':
    case 'unknown':
      if (raw === undefined) {
        return streamInterruptedFailure(
          `The provider stream ended without a finish reason of the provider's own (reported as "${unified}"), so the response was cut off.`,
        );
      }
      return {
        kind: 'unknown',
        retryable: true,
        message: `The provider finished with reason "${raw}", which does not say the answer is complete; the step's output is not used.`,
      };
    default:
      return assertNever(unified, 'finish reason');
  }
}
