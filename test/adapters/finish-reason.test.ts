import { describe, expect, it } from 'vitest';
import { finishFailure, isCleanFinish, resolveFinishReason } from '../../adapters/finish-reason.ts';
import type { FinishReason } from '../../events/facts.ts';

describe('finishFailure', () => {
  it.each([
    [{ unified: 'stop', raw: 'end_turn' }],
    [{ unified: 'tool-calls', raw: 'tool_use' }],
    // The Responses APIs report every successful response without a raw reason.
    [{ unified: 'stop', raw: undefined }],
    [{ unified: 'tool-calls', raw: undefined }],
    [{ unified: 'length', raw: 'max_tokens' }],
    [{ unified: 'content-filter', raw: 'refusal' }],
    // An ambiguous finish whose provider spelling says how it ended is that finish.
    [{ unified: 'other', raw: 'STOP' }],
    [{ unified: 'unknown', raw: 'max-output-tokens' }],
  ] as [FinishReason][])('completes a step that finished %o', (finishReason) => {
    expect(finishFailure(finishReason)).toBeUndefined();
  });

  it.each([
    [
      { unified: 'other', raw: undefined },
      'stream_interrupted',
      true,
      'The provider stream ended without a finish reason of the provider\'s own (reported as "other"), so the response was cut off.',
    ],
    [
      { unified: 'unknown', raw: undefined },
      'stream_interrupted',
      true,
      'The provider stream ended without a finish reason of the provider\'s own (reported as "unknown"), so the response was cut off.',
    ],
    [
      { unified: 'other', raw: 'compaction' },
      'unknown',
      true,
      'The provider finished with reason "compaction", which does not say the answer is complete; the step\'s output is not used.',
    ],
    [
      { unified: 'interrupted', raw: undefined },
      'stream_interrupted',
      true,
      'The provider stream ended with finish reason "interrupted".',
    ],
    [
      { unified: 'error', raw: 'OTHER_ERROR' },
      'stream_interrupted',
      true,
      'The provider stream ended with finish reason "error" (provider reason "OTHER_ERROR").',
    ],
    [
      { unified: 'error', raw: 'MALFORMED_FUNCTION_CALL' },
      'malformed_tool_call',
      false,
      'The provider rejected the model\'s tool call as malformed (provider reason "MALFORMED_FUNCTION_CALL").',
    ],
  ] as [FinishReason, string, boolean, string][])(
    'fails a step that finished %o as %s (retryable: %s)',
    (finishReason, kind, retryable, message) => {
      expect(finishFailure(finishReason)).toEqual({ kind, retryable, message });
    },
  );

  it('agrees with the guard: every finish the guard trusts completes the step', () => {
    const unified: FinishReason['unified'][] = [
      'stop',
      'length',
      'content-filter',
      'tool-calls',
      'error',
      'interrupted',
      'other',
      'unknown',
    ];
    for (const reason of unified) {
      for (const raw of [undefined, 'stop', 'tool_calls', 'length', 'weird']) {
        const finish: FinishReason = { unified: reason, raw };
        if (isCleanFinish(finish))
          expect(finishFailure(finish), JSON.stringify(finish)).toBeUndefined();
        expect(resolveFinishReason(resolveFinishReason(finish))).toEqual(
          resolveFinishReason(finish),
        );
      }
    }
  });
});
