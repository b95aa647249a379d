import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRequestHasher } from '../../adapters/request-hash.ts';
import { hashText } from '../../events/json.ts';

const message = fc.oneof(
  fc.record({ role: fc.constant('user'), content: fc.string() }),
  fc.record({
    role: fc.constant('assistant'),
    content: fc.array(fc.record({ type: fc.constant('text'), text: fc.string() }), {
      maxLength: 2,
    }),
  }),
);

/** What a session does to its next request's messages. */
const change = fc.oneof(
  fc.record({ kind: fc.constant('grow' as const), added: fc.array(message, { maxLength: 3 }) }),
  fc.record({ kind: fc.constant('cut' as const), keep: fc.nat() }),
  fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), with: message }),
  fc.record({
    kind: fc.constant('restart' as const),
    messages: fc.array(message, { maxLength: 3 }),
  }),
);

const otherKeys = fc.record(
  {
    system: fc.string(),
    tools: fc.array(fc.record({ name: fc.string(), description: fc.string() }), { maxLength: 2 }),
    maxOutputTokens: fc.option(fc.nat(), { nil: undefined }),
  },
  { requiredKeys: [] },
);

describe('createRequestHasher', () => {
  it('gives hashText(JSON.stringify(body)) for every request of a session, however it changes', () => {
    fc.assert(
      fc.property(
        fc.array(message, { minLength: 1, maxLength: 3 }),
        fc.array(fc.tuple(change, otherKeys, fc.boolean()), { maxLength: 12 }),
        (start, changes) => {
          const hashRequest = createRequestHasher();
          let messages: object[] = start;
          for (const [next, keys, messagesFirst] of changes) {
            if (next.kind === 'grow') messages = [...messages, ...next.added];
            if (next.kind === 'cut')
              messages = messages.slice(0, next.keep % (messages.length + 1));
            if (next.kind === 'replace' && messages.length > 0)
              messages = messages.with(next.at % messages.length, next.with);
            if (next.kind === 'restart') messages = next.messages;
            const body = messagesFirst ? { messages, ...keys } : { ...keys, messages };
            expect(hashRequest(body)).toBe(hashText(JSON.stringify(body)));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('hashes only the new messages of a request that extends the previous one', () => {
    const hashRequest = createRequestHasher();
    let serialized = 0;
    const counted = (content: string) => ({
      role: 'user',
      get content() {
        serialized += 1;
        return content;
      },
    });
    const history = [counted('a'), counted('b')];
    hashRequest({ system: 's', messages: history });
    expect(serialized).toBe(2);
    const longer = [...history, counted('c')];
    expect(hashRequest({ system: 's', messages: longer })).toBe(
      hashText(JSON.stringify({ system: 's', messages: [...longer] })),
    );
    // The hasher read only the new message; the check above serialized all three.
    expect(serialized).toBe(2 + 1 + 3);
  });

  it('hashes a body without messages, or with messages that are not objects, as JSON', () => {
    const hashRequest = createRequestHasher();
    for (const body of [{ system: 'x' }, { messages: [] }, { messages: ['a', 'b'] }, {}]) {
      expect(hashRequest(body)).toBe(hashText(JSON.stringify(body)));
    }
  });
});
