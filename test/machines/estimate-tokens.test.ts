import { describe, expect, it } from 'vitest';
import type { Fact, ProposedFact } from '../../events/facts.ts';
import type { PreparedRequest } from '../../machines/pure/actor-inputs.ts';
import {
  estimateRequestTokens,
  fileTokens,
  imageTokens,
  pdfPageTokens,
} from '../../machines/pure/estimate-tokens.ts';
import { factBuilder, runStartedDraft } from '../helpers/fact-builder.ts';

/** A file of `bytes` bytes, base64 (a byte repeated: what it holds does not matter). */
function base64Of(text: string): string {
  return btoa(text);
}

/** A photo-sized image: 300 KB of bytes, 400,000 base64 characters. */
const photo = { mediaType: 'image/jpeg', data: base64Of('x'.repeat(300_000)) };
/** A two-page PDF (only its page objects matter to the estimate), padded to ~120 KB. */
const twoPages = {
  mediaType: 'application/pdf',
  data: base64Of(
    `%PDF-1.4\n1 0 obj << /Type /Pages /Kids [2 0 R 3 0 R] >>\n2 0 obj << /Type /Page >>\n3 0 obj <</Type/Page>>\n${' '.repeat(120_000)}`,
  ),
};
/** 8,000 bytes of text. */
const notes = { mediaType: 'text/plain', data: base64Of('n'.repeat(8_000)) };

const request = (content: PreparedRequest['messages'][number]['content']): PreparedRequest =>
  ({ messages: [{ role: 'user', content }], tools: [] }) as PreparedRequest;

describe('the token estimate of attached files', () => {
  it('counts an image at a fixed cost, a PDF by its pages, other files as text', () => {
    expect(fileTokens(photo)).toBe(imageTokens);
    expect(fileTokens({ mediaType: 'IMAGE/PNG', data: 'AA==' })).toBe(imageTokens);
    expect(fileTokens(twoPages)).toBe(2 * pdfPageTokens);
    // No page object to count (object streams, or not a PDF at all): ~50 KB a page.
    const opaque = { mediaType: 'application/pdf', data: base64Of('z'.repeat(120_000)) };
    expect(fileTokens(opaque)).toBe(3 * pdfPageTokens);
    expect(fileTokens({ mediaType: 'application/pdf', data: '%%%' })).toBe(pdfPageTokens);
    expect(fileTokens(notes)).toBe(2_000);
  });

  it('counts a whole request’s files by that rule, not by their base64 characters', () => {
    const text = 'What is in these?';
    const files = [photo, twoPages, notes].map((file) => ({ type: 'file' as const, ...file }));
    const withFiles = estimateRequestTokens([], request([{ type: 'text', text }, ...files]));
    // The JSON's characters with each file's data left out (the tools: `[]`), ÷ 4.
    const emptied = request([
      { type: 'text', text },
      ...files.map((file) => ({ ...file, data: '' })),
    ]);
    const characters = JSON.stringify(emptied.messages).length + 2;
    expect(withFiles).toBe(Math.ceil(characters / 4) + imageTokens + 2 * pdfPageTokens + 2_000);
    // Before, the base64 was counted as characters: 100,000 tokens for the photo alone.
    expect(withFiles).toBeLessThan(20_000);
  });

  it('adds the files of a run started since the last reported step', () => {
    const fact = factBuilder();
    const ofSession = (draft: ProposedFact) => fact(draft);
    const facts: Fact[] = [
      ofSession(runStartedDraft('first')),
      ofSession({
        type: 'step.completed',
        stepId: 'step_1',
        finishReason: { unified: 'stop', raw: 'stop' },
        usage: {
          inputTokens: 1_000,
          outputTokens: 10,
          reasoningTokens: undefined,
          cachedInputTokens: undefined,
        },
        content: [{ type: 'text', text: 'ok' }],
        toolCalls: [],
        response: { id: undefined, modelId: undefined },
      } as ProposedFact),
      ofSession({ type: 'run.ended', status: 'completed', reason: 'end_turn' } as ProposedFact),
      ofSession({
        ...runStartedDraft('Look'),
        input: { text: 'Look', files: [photo, photo, notes] },
      } as ProposedFact),
    ];
    // The reported 1,000, the answer "ok" and "Look" (6 characters: 2 tokens), and the files.
    expect(estimateRequestTokens(facts, request('unused'))).toBe(
      1_000 + 2 + 2 * imageTokens + 2_000,
    );
  });
});
