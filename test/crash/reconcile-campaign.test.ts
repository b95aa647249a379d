import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { Fact } from '../../events/facts.ts';
import { sequentialIds } from '../../events/ids.ts';
import { projectTurn } from '../../events/project-turn.ts';
import { createRuntime, type Runtime } from '../../runtime.ts';
import type { EventStore } from '../../store/event-store.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { defineTool } from '../../tools/define-tool.ts';

/**
 * A seeded, in-process campaign of crashes against tools that call an external service with its
 * own ledger: `charge` (has `reconcile`: it looks the key up), `notify` (idempotent: the service
 * deduplicates it by key) and `shell` (neither). A "crash" stops a process at a random append:
 * from then on its store takes nothing (the append in flight included) and never answers, so
 * nothing it does later reaches the log, while a tool already executing may still have its
 * effect at the service. A new process recovers the run, until it ends. Budgeted by count
 * (episodes), not by time. Checked after each episode: no effect landed twice at the service,
 * every indeterminate call of charge or notify was answered without a person, a person was asked
 * only about shell, and the run ended once.
 */

/** The external service: a ledger of applied effects, by idempotency key. */
function service() {
  const ledger: { op: string; key: string }[] = [];
  return {
    ledger,
    apply(op: string, key: string) {
      // notify is deduplicated by key; charge and shell apply every request.
      if (op === 'notify' && ledger.some((entry) => entry.op === op && entry.key === key)) return;
      ledger.push({ op, key });
    },
    has: (op: string, key: string) => ledger.some((entry) => entry.op === op && entry.key === key),
  };
}

function tools(external: ReturnType<typeof service>) {
  const input = z.object({ n: z.number() });
  return {
    charge: defineTool({
      description: 'Charges.',
      inputSchema: input,
      execute: async (_value, { idempotencyKey }) => {
        external.apply('charge', idempotencyKey);
        return 'charged';
      },
      reconcile: async (_value, { idempotencyKey }) =>
        external.has('charge', idempotencyKey)
          ? { status: 'done', output: 'charged' }
          : { status: 'not-done' },
    }),
    notify: defineTool({
      description: 'Notifies.',
      inputSchema: input,
      idempotent: true,
      execute: async (_value, { idempotencyKey }) => {
        external.apply('notify', idempotencyKey);
        return 'notified';
      },
    }),
    shell: defineTool({
      description: 'Runs a command.',
      inputSchema: input,
      execute: async (_value, { idempotencyKey }) => {
        external.apply('shell', idempotencyKey);
        return 'ran';
      },
    }),
  };
}

/** Calls the three tools twice over two steps, then answers. */
function model() {
  const step = (call: LanguageModelV4CallOptions) => {
    const results = call.prompt.filter((message) => message.role === 'tool').length;
    if (results >= 2) return { text: 'All done.' };
    const n = results + 1;
    return {
      toolCalls: [
        { name: 'charge', input: { n } },
        { name: 'notify', input: { n } },
        { name: 'shell', input: { n } },
      ],
    };
  };
  return scriptedModel(Array.from({ length: 40 }, () => step));
}

/** A store that stops (takes nothing, answers nothing) at its `stopAt`-th append. */
function crashingStore(store: EventStore, stopAt: number) {
  let appends = 0;
  const crashed = { value: false };
  const wrapped = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      if (key === 'close') return async () => {};
      return (...args: unknown[]) => {
        if (crashed.value) return new Promise(() => {});
        if (key === 'append') {
          appends += 1;
          if (appends >= stopAt) {
            crashed.value = true;
            return new Promise(() => {});
          }
        }
        return value.apply(target, args);
      };
    },
  });
  return { store: wrapped as EventStore, crashed };
}

/** A small seeded generator (mulberry32). */
function seeded(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

async function episode(seed: number) {
  const random = seeded(seed);
  const external = service();
  const shared = memoryStore();
  const generateId = sequentialIds();
  const askedAbout: string[] = [];
  const askedNames: string[] = [];
  let crashes = 0;
  const open = (stopAt: number) => {
    const { store, crashed } = crashingStore(shared, stopAt);
    const runtime: Runtime = createRuntime({
      model: model(),
      tools: tools(external),
      store,
      generateId,
      limits: { maxAttempts: 100 },
    });
    return { runtime, crashed };
  };
  const ended = async () => (await shared.read('s1')).some((fact) => fact.type === 'run.ended');
  // Until the process crashes or the run ends, answering what a person is asked.
  const drive = async ({ runtime, crashed }: ReturnType<typeof open>) => {
    const decidedHere = new Set<string>();
    for (let spins = 0; spins < 20_000; spins += 1) {
      if (crashed.value || (await ended())) return;
      // Read from the log itself: a stopped process never answers.
      for (const pending of projectTurn(await shared.read('s1')).pending) {
        if (pending.kind !== 'indeterminate' || decidedHere.has(pending.callId)) continue;
        decidedHere.add(pending.callId);
        if (!askedAbout.includes(pending.callId)) {
          askedAbout.push(pending.callId);
          askedNames.push(pending.name);
        }
        void runtime
          .decide({ sessionId: 's1', callId: pending.callId, decision: 'report-unknown' })
          .catch(() => {});
      }
      await flush();
    }
    throw new Error(
      `seed ${seed}: the run neither crashed nor ended: ${(await shared.read('s1')).map((fact) => `${fact.type}${'answer' in fact ? `=${fact.answer}` : ''}${'name' in fact ? `(${fact.name})` : ''}→${fact.state}`).join(' ')}`,
    );
  };
  // Each process stops at a random append among the next 1–12, until 6 crashes; then one runs on.
  const first = open(1 + Math.floor(random() * 12));
  // Not awaited: a process that stops mid-append never answers (send, recover).
  void first.runtime.send({ sessionId: 's1', text: 'go' }).catch(() => {});
  await drive(first);
  while (!(await ended())) {
    crashes += 1;
    const next = open(crashes >= 6 ? Number.POSITIVE_INFINITY : 1 + Math.floor(random() * 12));
    // Stopped before run.started was durable: the run never began, so it is sent again.
    const started = (await shared.read('s1')).length > 0;
    void (
      started ? next.runtime.recover() : next.runtime.send({ sessionId: 's1', text: 'go' })
    ).catch(() => {});
    await drive(next);
  }
  return {
    facts: await shared.read('s1'),
    ledger: external.ledger,
    askedAbout: askedNames,
    crashes,
  };
}

function check(facts: Fact[], ledger: { op: string; key: string }[], askedAbout: string[]) {
  const landed = new Map<string, number>();
  for (const entry of ledger) {
    const id = `${entry.op}:${entry.key}`;
    landed.set(id, (landed.get(id) ?? 0) + 1);
  }
  const twice = [...landed.values()].filter((count) => count > 1).length;
  const indeterminate = facts.filter(
    (fact) => fact.type === 'tool.indeterminate' && fact.name !== 'shell',
  );
  const answered = indeterminate.filter((mark) =>
    facts.some(
      (fact) =>
        fact.type === 'tool.reconciled' &&
        mark.type === 'tool.indeterminate' &&
        fact.callId === mark.callId &&
        fact.seq > mark.seq,
    ),
  );
  return {
    twice,
    indeterminate: indeterminate.length,
    answeredByTool: answered.length,
    askedAboutOthers: askedAbout.filter((name) => name !== 'shell').length,
    runEnded: facts.filter((fact) => fact.type === 'run.ended').length,
  };
}

describe('crash campaign: calls that may have run are checked by their own tools', () => {
  it('40 seeded episodes: no effect twice, every charge and notify answered without a person, one run.ended', async () => {
    let indeterminate = 0;
    let crashes = 0;
    for (let seed = 1; seed <= 40; seed += 1) {
      const result = await episode(seed);
      const figures = check(result.facts, result.ledger, result.askedAbout);
      expect(figures, `seed ${seed}`).toMatchObject({
        twice: 0,
        answeredByTool: figures.indeterminate,
        askedAboutOthers: 0,
        runEnded: 1,
      });
      indeterminate += figures.indeterminate;
      crashes += result.crashes;
    }
    console.info(
      `reconcile campaign: 40 episodes, ${crashes} crashes, ${indeterminate} indeterminate calls of charge or notify, all answered by their tools; 0 effects twice`,
    );
    // The schedule does hit calls while they run.
    expect(crashes).toBeGreaterThanOrEqual(40);
    expect(indeterminate).toBeGreaterThan(0);
  }, 120_000);
});
