import type { LanguageModelV4StreamPart } from '@ai-sdk/provider';

/** Every type of part a model's stream can carry (AI SDK language model specification v4). */
export type StreamPartType = LanguageModelV4StreamPart['type'];

/**
 * Whether a part is output of the model (something it said or did), which decides whether a
 * failed step may be retried: only a step that failed before any output is (I9).
 * - `never`: framing and metadata; nothing the model said.
 * - `non-empty`: a delta; output once it carries a character.
 * - `always`: a whole piece of the provider's work (a provider tool's result, a file, a source):
 *   sending the request again would repeat it.
 *
 * A `tool-call` is not output by itself: the bytes of a streamed call already were, and a call
 * delivered whole before the stream broke never ran and was never shown (provider packages even
 * emit a cut call at the end of a broken body), so sending the request again repeats nothing.
 */
export type OutputRule = 'never' | 'non-empty' | 'always';

/**
 * Every stream part type, classified: the one table `observedOutput` is computed from. Its
 * `satisfies` makes a part type added by an AI SDK upgrade a compile error here, instead of a
 * silent gap in what counts as output.
 *
 * | part | output | what the stream recorder keeps of it |
 * |---|---|---|
 * | `text-*`, `reasoning-*` | deltas with text | content parts with their provider options |
 * | `tool-input-*`, `tool-call` | deltas with bytes | the tool-call guard's evidence; provider-executed: a `provider-tool-call` content part |
 * | `tool-result` | always | a `provider-tool-result` content part (only providers stream results) |
 * | `tool-approval-request`, `file`, `reasoning-file`, `source` | always | nothing (not replayed) |
 * | `custom` (provider-specific, e.g. Anthropic's message metadata) | never | nothing |
 * | `finish` | never | finish reason and usage |
 * | `error` | never | the step's failure |
 * | `response-metadata` | never | response id and model id |
 * | `stream-start`, `ping`, `raw` | never | nothing |
 */
export const streamPartOutput = {
  'stream-start': 'never',
  'response-metadata': 'never',
  'text-start': 'never',
  'text-delta': 'non-empty',
  'text-end': 'never',
  'reasoning-start': 'never',
  'reasoning-delta': 'non-empty',
  'reasoning-end': 'never',
  'tool-input-start': 'never',
  'tool-input-delta': 'non-empty',
  'tool-input-end': 'never',
  'tool-call': 'never',
  'tool-result': 'always',
  'tool-approval-request': 'always',
  file: 'always',
  'reasoning-file': 'always',
  source: 'always',
  // Provider-specific parts, such as Anthropic's `anthropic.message_start` metadata.
  custom: 'never',
  finish: 'never',
  error: 'never',
  ping: 'never',
  raw: 'never',
} as const satisfies Record<StreamPartType, OutputRule>;

/**
 * True when `part` is output of the model. A part type this table does not know (a newer
 * provider package than the SDK turnlog was built against) counts as output: a retry is then
 * refused rather than risked.
 */
export function isOutput(part: LanguageModelV4StreamPart): boolean {
  const rule: OutputRule | undefined = Object.hasOwn(streamPartOutput, part.type)
    ? streamPartOutput[part.type]
    : undefined;
  switch (rule) {
    case 'never':
      return false;
    case 'non-empty':
      return 'delta' in part && part.delta.length > 0;
    case 'always':
    case undefined:
      return true;
  }
}
