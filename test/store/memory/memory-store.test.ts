import { describe, expect, it } from 'vitest';
import type { Fact } from '../../../events/facts.ts';
import { memoryStore } from '../../../store/memory/memory-store.ts';
import { storeFacts } from '../store-facts.ts';

const a = storeFacts('session_a');
const b = storeFacts('session_b');
const stored = (fact: ReturnType<typeof a.steering>, seq: number) => ({ ...fact, seq }) as Fact;

describe('memoryStore seeding', () => {
  it('starts from seed facts of several sessions, keeping their seq and open runs', async () => {
    const store = memoryStore({
      facts: [
        stored(b.runStarted('g1', 'run_b'), 1),
        stored(a.steering('f2', 'run_a'), 2),
        stored(a.runStarted('f1', 'run_a'), 1),
      ],
    });
    expect(await store.sessions()).toEqual(['session_a', 'session_b']);
    expect((await store.read('session_a')).map((fact) => [fact.id, fact.seq])).toEqual([
      ['f1', 1],
      ['f2', 2],
    ]);
    expect((await store.openRuns()).map((run) => run.runId)).toEqual(['run_a', 'run_b']);
    const next = await store.append('session_a', [a.runEnded('f3', 'run_a')], { expectedSeq: 2 });
    expect(next.appended[0]?.seq).toBe(3);
    await expect(store.append('session_a', [a.steering('f4', 'run_a')])).rejects.toMatchObject({
      name: 'RunSealedError',
    });
  });

  it('refuses seeds with a seq gap, naming the session', () => {
    expect(() =>
      memoryStore({
        facts: [stored(a.runStarted('f1', 'run_a'), 1), stored(a.steering('f3', 'run_a'), 3)],
      }),
    ).toThrow(/session session_a: seq 3 .* is where seq 2 belongs.*each keeps its seq, 1, 2, 3/);
  });

  it('refuses a seed that is not a stored fact', () => {
    expect(() => memoryStore({ facts: [a.runStarted('f1', 'run_a') as Fact] })).toThrow(
      /session session_a: the entry for seq 1 \(fact f1\) is not a valid fact: run.started field seq is missing/,
    );
    expect(() =>
      memoryStore({ facts: [{ ...stored(a.runStarted('f1', 'r'), 1), at: new Date() } as never] }),
    ).toThrow(/seed 0 is not a stored fact \(\$\.at is a Date/);
  });

  it('refuses a seed whose payload its type does not allow, naming seq, type and field', () => {
    const ended = { ...stored(a.runEnded('f2', 'run_a'), 2), status: 'finished' } as never;
    expect(() => memoryStore({ facts: [stored(a.runStarted('f1', 'run_a'), 1), ended] })).toThrow(
      'memoryStore({ facts }): session session_a: the entry for seq 2 (fact f2) is not a valid fact: run.ended field status must be one of "completed", "failed", "aborted", not "finished"',
    );
  });

  it.each([
    [
      'a second run.ended',
      [a.runEnded('f2', 'run_a'), a.runEnded('f3', 'run_a')],
      'seq 3 (run.ended, fact f3) is a second run.ended of run run_a; a run ends once and nothing follows (I7)',
    ],
    [
      'a fact after run.ended',
      [a.runEnded('f2', 'run_a'), a.steering('f3', 'run_a')],
      'seq 3 (steering.received, fact f3) comes after the run.ended of run run_a',
    ],
    [
      'a repeated fact id',
      [a.steering('f2', 'run_a'), a.steering('f2', 'run_a')],
      'seq 3 (steering.received, fact f2) repeats a fact id already used earlier in the session',
    ],
  ])('refuses seeds with %s instead of loading them silently', (_name, rest, message) => {
    const facts = [a.runStarted('f1', 'run_a'), ...rest].map((fact, index) =>
      stored(fact, index + 1),
    );
    expect(() => memoryStore({ facts })).toThrow(`session session_a: ${message}`);
  });

  it('does not share objects with the seed array', async () => {
    const seed = stored(a.runStarted('f1', 'run_a'), 1);
    const store = memoryStore({ facts: [seed] });
    (seed as { runId: string }).runId = 'changed';
    expect((await store.read('session_a'))[0]?.runId).toBe('run_a');
  });
});

describe('memoryStore partial slot', () => {
  it('never cuts a surrogate pair in half', async () => {
    const store = memoryStore({ partialChars: 4 });
    await store.savePartial('session_a', {
      runId: 'r',
      stepId: 's',
      attempt: 1,
      text: 'abc😀d',
      reasoning: '',
      truncated: false,
    });
    const partial = await store.loadPartial('session_a');
    expect(partial?.text).toBe('abc');
    expect(partial?.truncated).toBe(true);
  });
});
