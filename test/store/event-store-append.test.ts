import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NewFact } from '../../events/facts.ts';
import {
  ConcurrencyError,
  type EventStore,
  RunSealedError,
  StoreInputError,
} from '../../store/event-store.ts';
import { storeFacts } from './store-facts.ts';
import { type Harness, storeHarnesses } from './store-harnesses.ts';

describe.each(storeHarnesses)('$name (EventStore contract, appending)', ({ create }) => {
  let harness: Harness;
  let store: EventStore;
  const a = storeFacts('session_a');
  const b = storeFacts('session_b');

  beforeEach(async () => {
    harness = await create();
    store = harness.open();
  });

  afterEach(async () => {
    await store.close();
    await harness.cleanup();
  });

  describe('seq', () => {
    it('assigns seq 1, 2, 3 in append order and reports the last seq', async () => {
      const first = await store.append('session_a', [a.runStarted('f1', 'run_1')]);
      const second = await store.append('session_a', [
        a.steering('f2', 'run_1'),
        a.steering('f3', 'run_1'),
      ]);
      expect(first.appended.map((fact) => [fact.id, fact.seq])).toEqual([['f1', 1]]);
      expect(first.lastSeq).toBe(1);
      expect(second.appended.map((fact) => [fact.id, fact.seq])).toEqual([
        ['f2', 2],
        ['f3', 3],
      ]);
      expect(second.lastSeq).toBe(3);
      const read = await store.read('session_a');
      expect(read.map((fact) => fact.seq)).toEqual([1, 2, 3]);
      expect(read[1]).toEqual({ ...a.steering('f2', 'run_1'), seq: 2 });
    });

    it('counts seq per session', async () => {
      await store.append('session_a', [a.runStarted('fa1', 'run_a'), a.steering('fa2', 'run_a')]);
      const result = await store.append('session_b', [b.runStarted('fb1', 'run_b')]);
      expect(result.appended[0]?.seq).toBe(1);
      expect((await store.read('session_b')).map((fact) => fact.id)).toEqual(['fb1']);
    });

    it('reads from fromSeq on, and an unknown session as empty', async () => {
      await store.append('session_a', [
        a.runStarted('f1', 'run_1'),
        a.steering('f2', 'run_1'),
        a.steering('f3', 'run_1'),
      ]);
      expect((await store.read('session_a', { fromSeq: 2 })).map((fact) => fact.id)).toEqual([
        'f2',
        'f3',
      ]);
      expect(await store.read('session_a', { fromSeq: 4 })).toEqual([]);
      expect(await store.read('nobody')).toEqual([]);
    });

    it('appends concurrent calls to one session in call order', async () => {
      const results = await Promise.all(
        ['f1', 'f2', 'f3', 'f4'].map((id) => store.append('session_a', [a.steering(id, 'run_1')])),
      );
      expect(results.map((result) => result.appended[0]?.seq)).toEqual([1, 2, 3, 4]);
      expect((await store.read('session_a')).map((fact) => fact.id)).toEqual([
        'f1',
        'f2',
        'f3',
        'f4',
      ]);
    });
  });

  describe('expectedSeq', () => {
    it('appends when expectedSeq is the last seq (0 for an empty session)', async () => {
      await store.append('session_a', [a.runStarted('f1', 'run_1')], { expectedSeq: 0 });
      const result = await store.append('session_a', [a.steering('f2', 'run_1')], {
        expectedSeq: 1,
      });
      expect(result.lastSeq).toBe(2);
    });

    it('rejects a stale expectedSeq with ConcurrencyError and stores nothing', async () => {
      await store.append('session_a', [a.runStarted('f1', 'run_1'), a.steering('f2', 'run_1')]);
      const error = await store
        .append('session_a', [a.steering('f3', 'run_1')], { expectedSeq: 1 })
        .catch((caught: unknown) => caught);
      expect(ConcurrencyError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ sessionId: 'session_a', expectedSeq: 1, actualSeq: 2 });
      expect((await store.read('session_a')).map((fact) => fact.id)).toEqual(['f1', 'f2']);
    });

    it('rejects expectedSeq 1 on an empty session', async () => {
      await expect(
        store.append('session_a', [a.runStarted('f1', 'run_1')], { expectedSeq: 1 }),
      ).rejects.toMatchObject({ name: 'ConcurrencyError', expectedSeq: 1, actualSeq: 0 });
      expect(await store.sessions()).toEqual([]);
    });

    it('reads what an earlier call appended, so the seq a read ends at is the one expectedSeq checks', async () => {
      await store.append('session_a', [a.runStarted('f1', 'run_1')]);
      const pending = store.append('session_a', [a.steering('f2', 'run_1')]);
      const read = await store.read('session_a');
      expect(read.map((fact) => fact.id)).toEqual(['f1', 'f2']);
      const result = await store.append('session_a', [a.steering('f3', 'run_1')], {
        expectedSeq: read.at(-1)?.seq,
      });
      expect(result.appended.map((fact) => fact.seq)).toEqual([3]);
      expect((await pending).lastSeq).toBe(2);
    });

    it('lets exactly one of two racing appends with the same expectedSeq win', async () => {
      const outcomes = await Promise.allSettled([
        store.append('session_a', [a.steering('f1', 'run_1')], { expectedSeq: 0 }),
        store.append('session_a', [a.steering('f2', 'run_1')], { expectedSeq: 0 }),
      ]);
      expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected']);
      expect((await store.read('session_a')).map((fact) => fact.id)).toEqual(['f1']);
    });
  });

  describe('idempotence', () => {
    it('skips a fact whose id is known: not stored twice, not in appended', async () => {
      await store.append('session_a', [a.runStarted('f1', 'run_1')]);
      const repeat = await store.append('session_a', [a.runStarted('f1', 'run_1')]);
      expect(repeat).toEqual({ appended: [], lastSeq: 1 });
      const mixed = await store.append('session_a', [
        a.runStarted('f1', 'run_1'),
        a.steering('f2', 'run_1'),
      ]);
      expect(mixed.appended.map((fact) => [fact.id, fact.seq])).toEqual([['f2', 2]]);
      expect((await store.read('session_a')).map((fact) => fact.id)).toEqual(['f1', 'f2']);
    });

    it('accepts a repeat of only known facts whatever expectedSeq says (a lost answer retried)', async () => {
      await store.append('session_a', [a.runStarted('f1', 'run_1')], { expectedSeq: 0 });
      await store.append('session_a', [a.steering('f2', 'run_1')], { expectedSeq: 1 });
      const retry = await store.append('session_a', [a.runStarted('f1', 'run_1')], {
        expectedSeq: 0,
      });
      expect(retry).toEqual({ appended: [], lastSeq: 2 });
    });

    it('still checks expectedSeq when a repeat brings a new fact', async () => {
      await store.append('session_a', [a.runStarted('f1', 'run_1')]);
      await store.append('session_a', [a.steering('f2', 'run_1')]);
      await expect(
        store.append('session_a', [a.runStarted('f1', 'run_1'), a.steering('f3', 'run_1')], {
          expectedSeq: 1,
        }),
      ).rejects.toMatchObject({ name: 'ConcurrencyError', actualSeq: 2 });
    });

    it('stores an id repeated inside one append once', async () => {
      const result = await store.append('session_a', [
        a.steering('f1', 'run_1'),
        a.steering('f1', 'run_1'),
      ]);
      expect(result.appended.map((fact) => fact.id)).toEqual(['f1']);
      expect(result.lastSeq).toBe(1);
    });
  });

  describe('sealed runs', () => {
    beforeEach(async () => {
      await store.append('session_a', [a.runStarted('f1', 'run_1'), a.runEnded('f2', 'run_1')]);
    });

    it('rejects a new fact of an ended run with RunSealedError and stores nothing', async () => {
      const error = await store
        .append('session_a', [a.runStarted('f3', 'run_2'), a.steering('f4', 'run_1')])
        .catch((caught: unknown) => caught);
      expect(RunSealedError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ sessionId: 'session_a', runId: 'run_1' });
      expect((await store.read('session_a')).map((fact) => fact.id)).toEqual(['f1', 'f2']);
    });

    it('treats an exact-id repeat of the ended run as a no-op', async () => {
      const repeat = await store.append('session_a', [
        a.runStarted('f1', 'run_1'),
        a.runEnded('f2', 'run_1'),
      ]);
      expect(repeat).toEqual({ appended: [], lastSeq: 2 });
    });

    it('seals a run ended earlier in the same append', async () => {
      await expect(
        store.append('session_a', [
          a.runStarted('f3', 'run_2'),
          a.runEnded('f4', 'run_2'),
          a.steering('f5', 'run_2'),
        ]),
      ).rejects.toMatchObject({ name: 'RunSealedError', runId: 'run_2' });
      expect((await store.read('session_a')).map((fact) => fact.id)).toEqual(['f1', 'f2']);
    });

    it('lets other runs of the session go on', async () => {
      const result = await store.append('session_a', [a.runStarted('f3', 'run_2')]);
      expect(result.appended.map((fact) => fact.seq)).toEqual([3]);
    });
  });

  describe('session ids are keys: well-formed UTF-16 without NUL', () => {
    const bad = ['x\ud800', 'x\udbff', '\udc00x', 'x\u0000y'];

    it.each(bad)(
      'refuses session id %j with StoreInputError on every method, storing nothing',
      async (sessionId) => {
        const facts = storeFacts(sessionId);
        const calls: [string, () => unknown][] = [
          ['append', () => store.append(sessionId, [facts.runStarted('f1', 'run_1')])],
          ['read', () => store.read(sessionId)],
          ['subscribe', () => store.subscribe(sessionId, () => {})],
          ['loadPartial', () => store.loadPartial(sessionId)],
        ];
        for (const [method, call] of calls) {
          const error = await (async () => call())().catch((caught: unknown) => caught);
          expect(StoreInputError.isInstance(error), method).toBe(true);
          expect((error as Error).message).toMatch(
            /the session id .* cannot be a key: it (holds a NUL character|is not well-formed UTF-16 \(a lone surrogate)/,
          );
        }
        expect(await store.sessions()).toEqual([]);
      },
    );

    it('keeps x\ufffd (well-formed) apart from every id a lone surrogate would have become', async () => {
      const replacement = storeFacts('x\ufffd');
      await store.append('x\ufffd', [replacement.runStarted('f1', 'run_1')]);
      await expect(
        store.append('x\ud800', [storeFacts('x\ud800').runStarted('f1', 'run_1')]),
      ).rejects.toSatisfy(StoreInputError.isInstance);
      expect(await store.sessions()).toEqual(['x\ufffd']);
      expect((await store.read('x\ufffd')).map((fact) => fact.id)).toEqual(['f1']);
    });
  });

  describe('input validation (I11)', () => {
    const cases: [string, (fact: NewFact) => unknown, RegExp][] = [
      [
        'another session',
        (fact) => ({ ...fact, sessionId: 'session_b' }),
        /sessionId "session_b" is not the session/,
      ],
      [
        'a Date',
        (fact) => ({ ...fact, input: { text: new Date(0) } }),
        /the fact\.input\.text is a Date/,
      ],
      [
        'a function',
        (fact) => ({ ...fact, runtimeVersion: () => 'x' }),
        /runtimeVersion is a function/,
      ],
      ['NaN', (fact) => ({ ...fact, limits: { maxSteps: Number.NaN } }), /maxSteps is NaN/],
      [
        'an undefined array item',
        (fact) => ({ ...fact, tags: [1, undefined] }),
        /tags\[1\] is undefined/,
      ],
      ['no id', (fact) => ({ ...fact, id: '' }), /id must be a non-empty string/],
      [
        'a payload field of the wrong type',
        (fact) => ({ ...fact, text: 42 }),
        /fact 1 \(id f3\) was not stored: steering\.received field text must be string, not 42;/,
      ],
      [
        'a payload field missing',
        (fact) => ({ ...fact, text: undefined }),
        /steering\.received field text is missing \(expected string\)/,
      ],
      [
        'a misspelled field',
        (fact) => ({ ...fact, message_id: 'm' }),
        /steering\.received has unknown field message_id; no version of turnlog writes it/,
      ],
      [
        'an unknown type',
        (fact) => ({ ...fact, type: 'run.exploded' }),
        /type "run.exploded" is not a known fact type/,
      ],
      ['a seq of its own', (fact) => ({ ...fact, seq: 7 }), /carries a seq/],
      [
        'a run id with a lone surrogate',
        (fact) => ({ ...fact, runId: 'run_\ud800' }),
        /field runId must be well-formed UTF-16 without NUL/,
      ],
      [
        'a NUL in its id',
        (fact) => ({ ...fact, id: 'f\u00003' }),
        /field id must be well-formed UTF-16 without NUL/,
      ],
      ['not an object', () => 'run.started', /is not an object/],
    ];

    it.each(cases)(
      'rejects a fact with %s, naming it, and stores nothing',
      async (_name, spoil, message) => {
        await store.append('session_a', [a.runStarted('f1', 'run_1')]);
        const bad = spoil(a.steering('f3', 'run_1')) as NewFact;
        const error = await store
          .append('session_a', [a.steering('f2', 'run_1'), bad])
          .catch((caught: unknown) => caught);
        expect(StoreInputError.isInstance(error)).toBe(true);
        expect(error).toMatchObject({ sessionId: 'session_a', factIndex: 1 });
        expect((error as Error).message).toMatch(message);
        expect((await store.read('session_a')).map((fact) => fact.id)).toEqual(['f1']);
      },
    );

    it('drops an undefined property, as JSON does', async () => {
      const { appended } = await store.append('session_a', [
        { ...a.steering('f1', 'run_1'), state: undefined },
      ]);
      expect(Object.keys(appended[0] ?? {})).not.toContain('state');
      expect(Object.keys((await store.read('session_a'))[0] ?? {})).not.toContain('state');
    });

    it('rejects a bad expectedSeq, fromSeq or session id', async () => {
      await expect(store.append('session_a', [], { expectedSeq: -1 })).rejects.toMatchObject({
        name: 'StoreInputError',
      });
      await expect(store.read('session_a', { fromSeq: 1.5 })).rejects.toMatchObject({
        name: 'StoreInputError',
      });
      await expect(store.append('', [])).rejects.toMatchObject({ name: 'StoreInputError' });
    });
  });

  describe('copies', () => {
    it('hands out copies: mutating results, reads, listener facts or the input changes nothing', async () => {
      const input = a.runStarted('f1', 'run_1');
      store.subscribe('session_a', (fact) => {
        (fact as { runId: string }).runId = 'listener';
      });
      const { appended } = await store.append('session_a', [input]);
      (input as { runId: string }).runId = 'input';
      (appended[0] as { runId: string }).runId = 'result';
      const read = await store.read('session_a');
      (read[0] as { input: { text: string } }).input.text = 'read';
      expect(await store.read('session_a')).toEqual([{ ...a.runStarted('f1', 'run_1'), seq: 1 }]);
    });
  });
});
