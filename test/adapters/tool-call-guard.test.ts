import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createToolCallGuard, type GuardEvent } from '../../adapters/tool-call-guard.ts';
import type { FinishReason } from '../../events/facts.ts';

const stop: FinishReason = { unified: 'stop', raw: 'stop' };

function judge(events: GuardEvent[], maxOutputTokens?: number) {
  const guard = createToolCallGuard({ maxOutputTokens });
  for (const event of events) guard.observe(event);
  return guard.judge();
}

function streamedCall(
  id: string,
  name: string,
  deltas: string[],
  projected?: string,
): GuardEvent[] {
  return [
    { type: 'tool-input-start', id, toolName: name },
    ...deltas.map((delta): GuardEvent => ({ type: 'tool-input-delta', id, delta })),
    { type: 'tool-input-end', id },
    { type: 'tool-call', id, toolName: name, input: projected ?? deltas.join('') },
  ];
}

const finish = (finishReason: FinishReason, outputTokens?: number): GuardEvent => ({
  type: 'finish',
  finishReason,
  outputTokens,
});

describe('createToolCallGuard', () => {
  it('proves a streamed call with the value parsed from its bytes', () => {
    const records = judge([
      ...streamedCall('call_1', 'readFile', ['{"pa', 'th":"a.md"}']),
      finish(stop, 3),
    ]);
    expect(records).toEqual([
      { callId: 'call_1', name: 'readFile', input: { path: 'a.md' }, proof: 'raw-bytes' },
    ]);
  });

  it('keeps the provider options of the resolved call on its record', () => {
    const events = streamedCall('call_1', 'readFile', ['{}']);
    const resolved = events.at(-1) as Extract<GuardEvent, { type: 'tool-call' }>;
    resolved.providerOptions = { google: { thoughtSignature: 'sig' } };
    const [record] = judge([...events, finish(stop)]);
    expect(record?.providerOptions).toEqual({ google: { thoughtSignature: 'sig' } });
  });

  it('judges nothing as proven before a finish was observed', () => {
    const guard = createToolCallGuard({ maxOutputTokens: undefined });
    for (const event of streamedCall('call_1', 'readFile', ['{}'])) guard.observe(event);
    const [record] = guard.judge();
    expect(record?.proof).toBeNull();
    expect(record?.withheld).toBe(
      'This call was not run: the response ended without a finish signal, so the call may be incomplete. If you still need it, call the tool again.',
    );
  });

  it('withholds a call whose bytes are a JSON array, and keeps an object input for history', () => {
    const [record] = judge([
      ...streamedCall('call_1', 'readFile', ['[1,2]'], '{"path":"x"}'),
      finish(stop),
    ]);
    expect(record).toMatchObject({ proof: null, input: { path: 'x' } });
    expect(record?.withheld).toContain(
      'its streamed arguments are not a complete JSON object (got an array)',
    );
  });

  it('uses {} as the history input of a withheld call whose projected input is not an object', () => {
    const [record] = judge([
      ...streamedCall('call_1', 'readFile', ['{"a":'], '"text"'),
      finish(stop),
    ]);
    expect(record).toMatchObject({ proof: null, input: {} });
  });

  it('withholds every call when the provider did not report output tokens under a set limit', () => {
    const [record] = judge([...streamedCall('call_1', 'readFile', ['{}']), finish(stop)], 100);
    expect(record?.proof).toBeNull();
    expect(record?.withheld).toContain('did not report its output tokens');
  });

  it('proves a call whose output tokens stay below the limit', () => {
    const [record] = judge([...streamedCall('call_1', 'readFile', ['{}']), finish(stop, 99)], 100);
    expect(record?.proof).toBe('raw-bytes');
  });

  it('withholds a call resolved twice and reports it once', () => {
    const events = streamedCall('call_1', 'readFile', ['{}']);
    const records = judge([...events, events.at(-1) as GuardEvent, finish(stop)]);
    expect(records).toHaveLength(1);
    expect(records[0]?.withheld).toContain('completed this call id more than once');
  });

  it('withholds a call whose delta arrives after its end', () => {
    const records = judge([
      { type: 'tool-input-start', id: 'call_1', toolName: 'a' },
      { type: 'tool-input-delta', id: 'call_1', delta: '{' },
      { type: 'tool-input-end', id: 'call_1' },
      { type: 'tool-input-delta', id: 'call_1', delta: '}' },
      { type: 'tool-call', id: 'call_1', toolName: 'a', input: '{}' },
      finish(stop),
    ]);
    expect(records[0]?.withheld).toContain('its arguments arrived after its input had ended');
  });

  it('proves whole calls with their projected input when no call streamed bytes', () => {
    const records = judge([
      { type: 'tool-call', id: 'call_1', toolName: 'a', input: '{"x":1}' },
      { type: 'tool-call', id: 'call_2', toolName: 'b', input: '{}' },
      finish({ unified: 'tool-calls', raw: 'tool_use' }),
    ]);
    expect(records).toEqual([
      { callId: 'call_1', name: 'a', input: { x: 1 }, proof: 'whole-request' },
      { callId: 'call_2', name: 'b', input: {}, proof: 'whole-request' },
    ]);
  });

  it('never proves a call when random orderings, drops and duplications break its evidence', () => {
    const finishes: { reason: FinishReason; safe: boolean }[] = [
      { reason: { unified: 'stop', raw: 'stop' }, safe: true },
      { reason: { unified: 'tool-calls', raw: 'tool_calls' }, safe: true },
      { reason: { unified: 'other', raw: 'end_turn' }, safe: true },
      { reason: { unified: 'other', raw: 'other' }, safe: false },
      { reason: { unified: 'length', raw: 'max_tokens' }, safe: false },
      { reason: { unified: 'content-filter', raw: 'SAFETY' }, safe: false },
      { reason: { unified: 'error', raw: 'error' }, safe: false },
    ];
    const argumentsText = fc.oneof(
      fc
        .dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })
        .map((value) => JSON.stringify(value)),
      fc.constantFrom('{"a":', '[1]', '"x"', '{"a":1}}', 'null', ''),
    );
    const scenario = fc
      .record({
        text: argumentsText,
        cuts: fc.array(fc.nat(), { maxLength: 4 }),
        finishIndex: fc.nat({ max: finishes.length - 1 }),
        extra: fc.constantFrom<GuardEvent[]>([], [{ type: 'error' }], [{ type: 'abort' }]),
      })
      .chain(({ text, cuts, finishIndex, extra }) => {
        const deltas = splitAt(text, cuts);
        const base: GuardEvent[] = [
          ...streamedCall('call_1', 'readFile', deltas, text),
          finish((finishes[finishIndex] as { reason: FinishReason }).reason),
          ...extra,
        ];
        return fc.record({
          base: fc.constant(base),
          safeFinish: fc.constant((finishes[finishIndex] as { safe: boolean }).safe),
          // Mostly-valid streams (a few drops, duplications, swaps) and arbitrary shuffles.
          picks: fc.oneof(
            fc
              .array(
                fc.record({
                  op: fc.constantFrom('drop', 'duplicate', 'swap'),
                  at: fc.nat(),
                }),
                { minLength: 1, maxLength: 3 },
              )
              .map((edits) => applyEdits(base.length, edits)),
            fc.array(fc.nat({ max: base.length - 1 }), { maxLength: base.length * 2 }),
          ),
        });
      });

    fc.assert(
      fc.property(scenario, ({ base, safeFinish, picks }) => {
        const events = picks.map((index) => base[index] as GuardEvent);
        const records = judge(events);
        for (const record of records) {
          if (record.proof === null) continue;
          const kinds = events.map((event) => event.type);
          const count = (type: GuardEvent['type']) => kinds.filter((kind) => kind === type).length;
          const deltas = events.filter(
            (event): event is Extract<GuardEvent, { type: 'tool-input-delta' }> =>
              event.type === 'tool-input-delta',
          );
          const bytes = deltas.map((event) => event.delta).join('');
          expect(safeFinish).toBe(true);
          expect(count('finish')).toBe(1);
          expect(count('error') + count('abort')).toBe(0);
          expect(count('tool-call')).toBe(1);
          expect(kinds.lastIndexOf('finish')).toBe(kinds.length - 1);
          if (record.proof === 'raw-bytes') {
            expect(count('tool-input-start')).toBe(1);
            expect(count('tool-input-end')).toBe(1);
            const start = kinds.indexOf('tool-input-start');
            const end = kinds.indexOf('tool-input-end');
            expect(kinds.indexOf('tool-input-delta')).toBeGreaterThan(start);
            expect(kinds.lastIndexOf('tool-input-delta')).toBeLessThan(end);
            expect(kinds.indexOf('tool-call')).toBeGreaterThan(end);
            const value = JSON.parse(bytes) as unknown;
            expect(typeof value === 'object' && value !== null && !Array.isArray(value)).toBe(true);
            expect(record.input).toEqual(value);
          } else {
            // The whole-request fallback only applies when no byte streamed at all.
            expect(record.proof).toBe('whole-request');
            expect(bytes).toBe('');
          }
        }
      }),
      { numRuns: 2000 },
    );
  });
});

function splitAt(text: string, cuts: number[]): string[] {
  const points = [...new Set(cuts.map((cut) => cut % (text.length + 1)))].sort((a, b) => a - b);
  const chunks: string[] = [];
  let previous = 0;
  for (const point of points) {
    if (point > previous) chunks.push(text.slice(previous, point));
    previous = Math.max(previous, point);
  }
  chunks.push(text.slice(previous));
  return chunks.filter((chunk) => chunk.length > 0);
}

function applyEdits(length: number, edits: { op: 'drop' | 'duplicate' | 'swap'; at: number }[]) {
  const picks = Array.from({ length }, (_, index) => index);
  for (const { op, at } of edits) {
    if (picks.length === 0) break;
    const index = at % picks.length;
    if (op === 'drop') picks.splice(index, 1);
    else if (op === 'duplicate') picks.splice(index, 0, picks[index] as number);
    else if (index + 1 < picks.length) {
      [picks[index], picks[index + 1]] = [picks[index + 1] as number, picks[index] as number];
    }
  }
  return picks;
}
