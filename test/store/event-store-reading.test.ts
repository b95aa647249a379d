import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type EventStore, StoreClosedError } from '../../store/event-store.ts';
import { storeFacts } from './store-facts.ts';
import { type Harness, readEverything, storeHarnesses } from './store-harnesses.ts';

describe.each(storeHarnesses)('$name (EventStore contract, reading)', ({ create }) => {
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

  describe('subscribe', () => {
    it('delivers facts appended after subscribing, in seq order, once each, per session', async () => {
      await store.append('session_a', [a.runStarted('f1', 'run_1')]);
      const seen: string[] = [];
      store.subscribe('session_a', (fact) => seen.push(`${fact.id}@${fact.seq}`));
      await Promise.all([
        store.append('session_a', [a.steering('f2', 'run_1'), a.steering('f3', 'run_1')]),
        store.append('session_a', [a.steering('f4', 'run_1')]),
        store.append('session_b', [b.runStarted('g1', 'run_b')]),
      ]);
      await store.append('session_a', [a.steering('f2', 'run_1')]);
      expect(seen).toEqual(['f2@2', 'f3@3', 'f4@4']);
    });

    it('stops delivering after unsubscribe', async () => {
      const seen: string[] = [];
      const unsubscribe = store.subscribe('session_a', (fact) => seen.push(fact.id));
      await store.append('session_a', [a.runStarted('f1', 'run_1')]);
      unsubscribe();
      await store.append('session_a', [a.steering('f2', 'run_1')]);
      expect(seen).toEqual(['f1']);
    });

    it('keeps the store and the other listeners working when a listener throws', async () => {
      const reported: [string, string][] = [];
      await store.close();
      store = harness.open({
        onListenerError: (error, fact) => reported.push([(error as Error).message, fact.id]),
      });
      const seen: string[] = [];
      store.subscribe('session_a', () => {
        throw new Error('listener broke');
      });
      store.subscribe('session_a', (fact) => seen.push(fact.id));
      await store.append('session_a', [a.runStarted('f1', 'run_1')]);
      await store.append('session_a', [a.steering('f2', 'run_1')]);
      expect(seen).toEqual(['f1', 'f2']);
      expect(reported).toEqual([
        ['listener broke', 'f1'],
        ['listener broke', 'f2'],
      ]);
      expect((await store.read('session_a')).length).toBe(2);
    });

    it('keeps seq order for every listener when a listener appends from its callback', async () => {
      const first: number[] = [];
      const second: number[] = [];
      store.subscribe('session_a', (fact) => {
        first.push(fact.seq);
        if (fact.id === 'f1') void store.append('session_a', [a.steering('f2', 'run_1')]);
      });
      const appendedTwo = new Promise<void>((resolve) => {
        store.subscribe('session_a', (fact) => {
          second.push(fact.seq);
          if (fact.seq === 2) resolve();
        });
      });
      await store.append('session_a', [a.runStarted('f1', 'run_1')]);
      await appendedTwo;
      expect(first).toEqual([1, 2]);
      expect(second).toEqual([1, 2]);
    });
  });

  describe('openRuns and sessions', () => {
    it('lists runs started and not ended, across sessions, by session then start order', async () => {
      await store.append('session_b', [b.runStarted('g1', 'run_b1')]);
      await store.append('session_a', [
        a.runStarted('f1', 'run_a1'),
        a.runStarted('f2', 'run_a2'),
        a.runEnded('f3', 'run_a1'),
        a.runStarted('f4', 'run_a3'),
      ]);
      expect(await store.openRuns()).toEqual([
        { sessionId: 'session_a', turnId: 'turn_1', runId: 'run_a2' },
        { sessionId: 'session_a', turnId: 'turn_1', runId: 'run_a3' },
        { sessionId: 'session_b', turnId: 'turn_1', runId: 'run_b1' },
      ]);
    });

    it('lists every session with a fact, and none for a rejected first append', async () => {
      await store.append('session_b', [b.runStarted('g1', 'run_b')]);
      await store.append('session_a', [a.runStarted('f1', 'run_a')]);
      await store.append('session_c', [a.runStarted('h1', 'run_c')]).catch(() => {});
      await store
        .append('session_d', [storeFacts('session_d').runStarted('d1', 'r')], { expectedSeq: 3 })
        .catch(() => {});
      expect(await store.sessions()).toEqual(['session_a', 'session_b']);
    });
  });

  describe('partial snapshot slot', () => {
    const partial = {
      runId: 'run_1',
      stepId: 'step_1',
      attempt: 1,
      text: 'Hel',
      reasoning: '',
      truncated: false,
    };

    it('keeps one overwritten slot per session until cleared', async () => {
      expect(await store.loadPartial('session_a')).toBeUndefined();
      await store.savePartial('session_a', partial);
      await store.savePartial('session_a', { ...partial, text: 'Hello' });
      await store.savePartial('session_b', { ...partial, text: 'other' });
      expect(await store.loadPartial('session_a')).toEqual({ ...partial, text: 'Hello' });
      await store.clearPartial('session_a');
      expect(await store.loadPartial('session_a')).toBeUndefined();
      expect((await store.loadPartial('session_b'))?.text).toBe('other');
      await store.clearPartial('session_a');
    });

    it('cuts text and reasoning to 16 KiB each and sets truncated', async () => {
      await store.savePartial('session_a', {
        ...partial,
        text: 'x'.repeat(20_000),
        reasoning: 'r'.repeat(10),
      });
      const loaded = await store.loadPartial('session_a');
      expect(loaded?.text).toBe('x'.repeat(16_384));
      expect(loaded?.reasoning).toBe('r'.repeat(10));
      expect(loaded?.truncated).toBe(true);
    });

    it('does not make a session appear', async () => {
      await store.savePartial('session_a', partial);
      expect(await store.sessions()).toEqual([]);
    });

    it('rejects a malformed partial snapshot', async () => {
      await expect(
        store.savePartial('session_a', { ...partial, attempt: 'one' } as never),
      ).rejects.toMatchObject({ name: 'StoreInputError' });
    });
  });

  describe('reopen and close', () => {
    it('returns the same facts byte for byte, open runs and sessions after a reopen', async () => {
      const odd = 'Ünïcödé / ../ \\ :*? CON .';
      await store.append('session_a', [
        a.runStarted('f1', 'run_1', 'x'.repeat(3_000)),
        { ...a.steering('f2', 'run_1', 'line\nbreak "quoted" \u2028'), state: 'requesting' },
        a.runEnded('f3', 'run_1'),
        a.runStarted('f4', 'run_2'),
      ]);
      await store.append(odd, [storeFacts(odd).runStarted('o1', 'run_o')]);
      const before = JSON.stringify(await readEverything(store));
      store = await harness.reopen(store);
      expect(JSON.stringify(await readEverything(store))).toBe(before);
      // A log the store wrote itself, read whole: nothing cut, nothing unreadable.
      expect(await store.findings()).toEqual([]);
      expect(await store.sessions()).toEqual([odd, 'session_a'].sort());
      expect((await store.openRuns()).map((run) => run.runId)).toEqual(
        odd < 'session_a' ? ['run_o', 'run_2'] : ['run_2', 'run_o'],
      );
      const next = await store.append('session_a', [a.runEnded('f5', 'run_2')], { expectedSeq: 4 });
      expect(next.appended[0]?.seq).toBe(5);
    });

    it('finishes appends started before close, then throws StoreClosedError', async () => {
      const pending = store.append('session_a', [a.runStarted('f1', 'run_1')]);
      await store.close();
      await expect(pending).resolves.toMatchObject({ lastSeq: 1 });
      await expect(store.append('session_a', [a.steering('f2', 'run_1')])).rejects.toSatisfy(
        StoreClosedError.isInstance,
      );
      await expect(store.read('session_a')).rejects.toSatisfy(StoreClosedError.isInstance);
      await expect(store.openRuns()).rejects.toSatisfy(StoreClosedError.isInstance);
      expect(() => store.subscribe('session_a', () => {})).toThrow(/is closed/);
    });
  });
});
