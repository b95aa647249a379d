import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { Fact } from '../../events/facts.ts';
import { sequentialIds } from '../../events/ids.ts';
import { createRuntime, type Runtime } from '../../runtime.ts';
import { InvalidArgumentError, SessionBusyError } from '../../runtime-errors.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import type { PostgresStore } from '../../store/postgres/postgres-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { UnknownDecisionError } from '../../tools/permission-policy.ts';
import type { Tool } from '../../tools/tool.ts';
import { calibrate, scaled } from '../helpers/calibration.ts';
import { testSchema } from '../helpers/postgres.ts';
import { deferred, isFactOf, until } from './runtime-helpers.ts';

// How much slower the machine is now than the quiet one (test/helpers/calibration.ts).
const { slowdown } = calibrate();

/**
 * The model of every worker: a pure function of the prompt, so any worker continues the
 * conversation where another left it. Until the prompt holds a tool result it calls `work`; then
 * it answers.
 */
function workerModel() {
  const step = (call: LanguageModelV4CallOptions) =>
    call.prompt.some((message) => message.role === 'tool')
      ? { text: 'All done.' }
      : { text: 'Working.', toolCalls: [{ id: 'call_w', name: 'work', input: { job: 'j1' } }] };
  return scriptedModel(Array.from({ length: 20 }, () => step));
}

/** A tool whose executions are counted and which can be held inside `execute`. */
function workTool(permission: 'allow' | 'ask' = 'allow') {
  const executions: string[] = [];
  let gate: Promise<void> | undefined;
  const tool = defineTool({
    description: 'Does a job.',
    inputSchema: z.object({ job: z.string() }),
    permission,
    execute: async ({ job }, { signal }) => {
      executions.push(job);
      if (gate !== undefined) {
        await Promise.race([
          gate,
          new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
        ]);
      }
      return `${job} done`;
    },
  });
  return {
    tool,
    executions,
    /** The next executions wait inside `execute` until the returned function is called. */
    hold() {
      const held = deferred();
      gate = held.promise;
      return () => {
        gate = undefined;
        held.resolve();
      };
    },
  };
}

/** Sequential ids of one worker, unique across the workers (as every generateId must make them). */
function prefixed(workerId: string) {
  const ids = sequentialIds();
  return (prefix: string) => `${ids(prefix)}_${workerId}`;
}

/** The (workerId, leaseEpoch) of each fact, in seq order, run-length encoded. */
function writers(facts: readonly Fact[]): string[] {
  const runs: string[] = [];
  for (const fact of facts) {
    const writer = `${fact.workerId}/${fact.leaseEpoch}`;
    if (runs.at(-1) !== writer) runs.push(writer);
  }
  return runs;
}

describe('workers on one postgresStore', () => {
  let database: ReturnType<typeof testSchema>;
  const runtimes: Runtime[] = [];

  beforeEach(() => {
    database = testSchema('workers');
  });

  afterEach(async () => {
    await Promise.all(runtimes.splice(0).map((runtime) => runtime.close().catch(() => {})));
    await database.drop();
  });

  function worker(
    id: string,
    tool: Tool,
    options: { leaseMs?: number; store?: PostgresStore } = {},
  ) {
    const runtime = createRuntime({
      model: workerModel(),
      tools: { work: tool },
      store: options.store ?? database.open(),
      generateId: prefixed(id),
      worker: { id, leaseMs: options.leaseMs ?? 60_000 },
    });
    runtimes.push(runtime);
    return runtime;
  }

  it('refuses a worker option on a store for one process', () => {
    const call = () =>
      createRuntime({ model: workerModel(), store: memoryStore(), worker: { id: 'w1' } });
    expect(call).toThrow(InvalidArgumentError);
    expect(call).toThrow(/worker needs a store several processes share/);
  });

  it("renews from a thread of its own on a postgresStore that made its pool; 'thread' is refused on a pool of yours", async () => {
    const threaded = createRuntime({ model: workerModel(), store: database.open() });
    runtimes.push(threaded);
    // The thread starts with the runtime; the event loop renews until it is up.
    while (threaded.worker?.renewal !== 'thread') await new Promise((done) => setTimeout(done, 10));
    const looped = createRuntime({
      model: workerModel(),
      store: database.open(),
      worker: { renewal: 'loop' },
    });
    runtimes.push(looped);
    expect(looped.worker?.renewal).toBe('loop');
    const pool = database.pool();
    try {
      const onPool = database.open({ pool });
      const defaulted = createRuntime({ model: workerModel(), store: onPool });
      runtimes.push(defaulted);
      expect(defaulted.worker?.renewal).toBe('loop');
      const call = () =>
        createRuntime({ model: workerModel(), store: onPool, worker: { renewal: 'thread' } });
      expect(call).toThrow(InvalidArgumentError);
      expect(call).toThrow(
        "createRuntime(): worker.renewal 'thread' needs a store that can open a connection of its own in a thread",
      );
      await defaulted.close();
    } finally {
      await pool.end();
    }
  });

  it('drives a run under its lease, and another worker refuses a second run of the session', async () => {
    const work = workTool();
    const release = work.hold();
    const a = worker('a', work.tool);
    const b = worker('b', work.tool);
    const turn = await a.send({ sessionId: 's1', text: 'go' });
    await until(turn, isFactOf('tool.started'));
    await expect(b.send({ sessionId: 's1', text: 'again' })).rejects.toThrow(SessionBusyError);
    release();
    expect(await turn.done).toMatchObject({ status: 'completed', text: 'All done.' });
    expect(writers(await a.facts('s1'))).toEqual(['a/1']);
    expect(work.executions).toEqual(['j1']);
  });

  it('gives a parked run to whichever worker a decision reaches; the first handle follows it to its end', async () => {
    const work = workTool('ask');
    const a = worker('a', work.tool);
    const b = worker('b', work.tool);
    const turn = await a.send({ sessionId: 's1', text: 'go' });
    await until(turn, isFactOf('tool.permission.requested'));
    // Parked: nobody holds the lease.
    await expect
      .poll(
        async () =>
          (await database.open().leaseOf({ sessionId: 's1', runId: turn.runId }))?.workerId,
      )
      .toBeUndefined();
    const [pending] = await b.pending('s1');
    await b.decide({ sessionId: 's1', callId: pending?.callId ?? '', decision: 'allow' });
    expect(await turn.done).toMatchObject({ status: 'completed', text: 'All done.' });
    const seen: string[] = [];
    for await (const event of turn.events) if ('seq' in event) seen.push(event.type);
    const facts = await b.facts('s1');
    expect(seen).toEqual(facts.map((fact) => fact.type));
    // a drove the run up to its ask, b (a new epoch) from the decision on.
    expect(writers(facts)).toEqual(['a/1', 'b/2']);
    expect(facts.find((fact) => fact.type === 'tool.permission.decided')?.workerId).toBe('b');
    expect(work.executions).toEqual(['j1']);
  });

  it('hands steer and stop to the worker that drives the run, through the inbox', async () => {
    const work = workTool();
    const release = work.hold();
    const a = worker('a', work.tool);
    const b = worker('b', work.tool);
    const turn = await a.send({ sessionId: 's1', text: 'go' });
    await until(turn, isFactOf('tool.started'));
    await b.steer({ sessionId: 's1', text: 'and hurry' });
    let facts = await b.facts('s1');
    const steering = facts.find((fact) => fact.type === 'steering.received');
    // a appended it, under its lease, with the request's id.
    expect(steering).toMatchObject({ workerId: 'a', leaseEpoch: 1, text: 'and hurry' });
    expect(steering?.id).toMatch(/^b:/);
    await b.stop({ sessionId: 's1', reason: 'enough' });
    expect(await turn.done).toMatchObject({ status: 'aborted', reason: 'stop_requested' });
    facts = await b.facts('s1');
    expect(writers(facts)).toEqual(['a/1']);
    release();
  });

  it('starts one run when two workers send to a new session at once', async () => {
    const work = workTool();
    const release = work.hold();
    const a = worker('a', work.tool);
    const b = worker('b', work.tool);
    const results = await Promise.allSettled([
      a.send({ sessionId: 's1', text: 'go' }),
      b.send({ sessionId: 's1', text: 'go too' }),
    ]);
    const started = results.flatMap((result) =>
      result.status === 'fulfilled' ? [result.value] : [],
    );
    const refused = results.flatMap((result) =>
      result.status === 'rejected' ? [result.reason] : [],
    );
    expect(started).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(String(refused[0])).toMatch(/^SessionBusyError/);
    release();
    expect(await started[0]?.done).toMatchObject({ status: 'completed' });
    const facts = await a.facts('s1');
    expect(facts.filter((fact) => fact.type === 'run.started')).toHaveLength(1);
  });

  it('lets decisions from two workers and a recover() race for a parked run: each succeeds, the call runs once', async () => {
    const work = workTool('ask');
    const a = worker('a', work.tool);
    const b = worker('b', work.tool);
    const c = worker('c', work.tool);
    const turn = await a.send({ sessionId: 's1', text: 'go' });
    await until(turn, isFactOf('tool.permission.requested'));
    const [pending] = await a.pending('s1');
    const decision = { sessionId: 's1', callId: pending?.callId ?? '', decision: 'allow' as const };
    const [fromB, fromC, recovered] = await Promise.allSettled([
      b.decide(decision),
      c.decide(decision),
      a.recover(),
    ]);
    expect(
      [fromB, fromC, recovered].map((result) =>
        result.status === 'rejected' ? String(result.reason) : result.status,
      ),
    ).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    expect(await turn.done).toMatchObject({ status: 'completed', text: 'All done.' });
    const facts = await a.facts('s1');
    expect(facts.filter((fact) => fact.type === 'tool.permission.decided')).toHaveLength(1);
    expect(work.executions).toEqual(['j1']);
  });

  it(
    'does two decisions sent at once to two workers for the two calls of one step, each promptly and once',
    async () => {
      // Issue 26, defect 1: the second decision, posted to the inbox while the other worker held
      // the parked run briefly, was parked again undone, over and over, until close().
      const work = workTool('ask');
      const twoCalls = (call: LanguageModelV4CallOptions) =>
        call.prompt.some((message) => message.role === 'tool')
          ? { text: 'Both done.' }
          : {
              toolCalls: [
                { id: 'call_1', name: 'work', input: { job: 'j1' } },
                { id: 'call_2', name: 'work', input: { job: 'j2' } },
              ],
            };
      const twoCallWorker = (id: string) => {
        const runtime = createRuntime({
          model: scriptedModel(Array.from({ length: 40 }, () => twoCalls)),
          tools: { work: work.tool },
          store: database.open(),
          generateId: prefixed(id),
          worker: { id, leaseMs: 1_000 },
        });
        runtimes.push(runtime);
        return runtime;
      };
      const a = twoCallWorker('a');
      const b = twoCallWorker('b');
      const sessions = Array.from({ length: 8 }, (_, index) => `s${index + 1}`);
      const turns = await Promise.all(
        sessions.map((sessionId) => a.send({ sessionId, text: 'go' })),
      );
      for (const turn of turns) await until(turn, isFactOf('tool.permission.requested'));
      for (const sessionId of sessions) {
        await expect.poll(async () => (await a.pending(sessionId)).length).toBe(2);
      }
      // Each pair at once. A decision left pending waited for ever (the run went from worker to
      // worker, parked again each time): the race below ends the test long before its timeout.
      const decided = Promise.all(
        sessions.map((sessionId) =>
          Promise.all([
            a.decide({ sessionId, callId: 'call_1', decision: 'allow' }),
            b.decide({ sessionId, callId: 'call_2', decision: 'allow' }),
          ]),
        ),
      ).then(() => 'decided');
      // A watchdog, scaled by how loaded the machine is (without the fix a decision hangs until
      // close(), so any bound catches it; a fixed 15 s would only measure the machine).
      const stuck = new Promise((resolve) =>
        setTimeout(() => resolve('a decision hung'), scaled(15_000, slowdown)),
      );
      expect(await Promise.race([decided, stuck])).toBe('decided');
      for (const turn of turns) expect(await turn.done).toMatchObject({ status: 'completed' });
      expect(work.executions.sort()).toEqual(sessions.flatMap(() => ['j1', 'j2']).sort());
    },
    scaled(60_000, slowdown),
  );

  it("applies a decision that reaches the driving worker before its own append of the call's request has returned: the sender succeeds, the call is decided once", async () => {
    const work = workTool('ask');
    const held = holdingAppendOf(database.open(), 'tool.permission.requested');
    const a = worker('a', work.tool, { store: held.store });
    const b = worker('b', work.tool);
    const turn = await a.send({ sessionId: 's1', text: 'go' });
    // The request is committed (b reads it) while a's append of it has not returned yet.
    await expect.poll(async () => (await b.pending('s1')).length).toBe(1);
    const [pending] = await b.pending('s1');
    // a takes b's request from its inbox; its append returns right after that.
    held.releaseOnInboxDelivery();
    await b.decide({ sessionId: 's1', callId: pending?.callId ?? '', decision: 'allow' });
    expect(await turn.done).toMatchObject({ status: 'completed', text: 'All done.' });
    const decided = (await b.facts('s1')).filter((fact) => fact.type === 'tool.permission.decided');
    expect(decided.map((fact) => [fact.workerId, fact.id.startsWith('b:request_')])).toEqual([
      ['a', true],
    ]);
    expect(work.executions).toEqual(['j1']);
  });

  it(
    'answers a decision already made that its driver could settle only after the run ended, at the end',
    async () => {
      // A decision already made commits no fact: its driver settles it after doing it, and the run
      // may end first, taking the lease the settlement is made under with it. Its sender learned
      // only at its next tick, leaseMs / 4 later (here 150 s; 15 s with the tests' minute, which
      // was the "hang" of a race of decisions and recover() under load).
      const work = workTool('ask');
      const settlement = holdingSettlement(database.open());
      const a = worker('a', work.tool, { leaseMs: 600_000, store: settlement.store });
      const b = worker('b', work.tool, { leaseMs: 600_000 });
      const turn = await a.send({ sessionId: 's1', text: 'go' });
      await until(turn, isFactOf('tool.permission.requested'));
      const [pending] = await a.pending('s1');
      const decision = {
        sessionId: 's1',
        callId: pending?.callId ?? '',
        decision: 'allow' as const,
      };
      const release = work.hold();
      await a.decide(decision);
      await until(turn, isFactOf('tool.started'));
      // b's repeat reaches a through the inbox while the tool runs; a settles it only after the end.
      const repeat = b.decide(decision).then(() => 'decided');
      await settlement.reached;
      release();
      expect(await turn.done).toMatchObject({ status: 'completed', text: 'All done.' });
      const stuck = new Promise((resolve) =>
        setTimeout(() => resolve('still waiting'), scaled(15_000, slowdown)),
      );
      try {
        expect(await Promise.race([repeat, stuck])).toBe('decided');
      } finally {
        settlement.release();
      }
      const facts = await b.facts('s1');
      expect(facts.filter((fact) => fact.type === 'tool.permission.decided')).toHaveLength(1);
      expect(work.executions).toEqual(['j1']);
    },
    scaled(60_000, slowdown),
  );

  it("throws a refusal from the driver's worker as the driver's error class", async () => {
    const work = workTool();
    const release = work.hold();
    const a = worker('a', work.tool);
    const b = worker('b', work.tool);
    const turn = await a.send({ sessionId: 's1', text: 'go' });
    await until(turn, isFactOf('tool.started'));
    const error = await b
      .decide({ sessionId: 's1', callId: 'call_nope', decision: 'allow' })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(UnknownDecisionError);
    expect(UnknownDecisionError.isInstance(error)).toBe(true);
    expect((error as UnknownDecisionError).callId).toBe('call_nope');
    release();
    expect(await turn.done).toMatchObject({ status: 'completed' });
  });

  it("takes over a paused worker's run: the started tool is indeterminate, the paused worker's late facts are refused", async () => {
    const work = workTool();
    const release = work.hold();
    const frozen = freezable(database.open());
    // A long lease, run out by hand once a is frozen: a 400 ms lease could lapse on a loaded
    // machine before the freeze, and a's own scan took the run back (a/2, not b/2).
    const a = worker('a', work.tool, { leaseMs: 60_000, store: frozen.store });
    const turn = await a.send({ sessionId: 's1', text: 'go' });
    await until(turn, isFactOf('tool.started'));
    // a stops: no renewal, no append gets through (a SIGSTOP, a partition).
    frozen.freeze();
    release();
    const admin = database.pool();
    await admin.query(
      `UPDATE "${database.schema}".leases SET expires_at = clock_timestamp() - interval '1 second' WHERE session_id = 's1'`,
    );
    await admin.end();
    const b = worker('b', work.tool, { leaseMs: 2_000 });
    const reader = database.open();
    await expect
      .poll(
        async () => (await reader.read('s1')).some((fact) => fact.type === 'tool.indeterminate'),
        {
          timeout: 10_000,
        },
      )
      .toBe(true);
    await b.decide({ sessionId: 's1', callId: 'call_w', decision: 'report-unknown' });
    // a wakes up: its tool.settled is refused, and its handle follows the run on b to its end.
    frozen.thaw();
    expect(await turn.done).toMatchObject({ status: 'completed', text: 'All done.' });
    const facts = await reader.read('s1');
    // b took the run over (epoch 2) and drove it to its end: the decision reached it live, or
    // after it parked the run on the indeterminate call (then under epoch 3).
    const [first, ...after] = writers(facts);
    expect(first).toBe('a/1');
    expect(after[0]).toBe('b/2');
    expect(after.every((writer) => /^b\/[23]$/.test(writer))).toBe(true);
    expect(facts.filter((fact) => fact.type === 'tool.settled' && fact.workerId === 'a')).toEqual(
      [],
    );
    expect(work.executions).toEqual(['j1']);
  });

  it("takes over a paused worker's run and asks the started call's own tool before anyone: reconcile says done", async () => {
    const executions: string[] = [];
    const held = deferred();
    const work = defineTool({
      description: 'Does a job, recorded in a ledger by its idempotency key.',
      inputSchema: z.object({ job: z.string() }),
      execute: async ({ job }, { idempotencyKey }) => {
        executions.push(idempotencyKey);
        await held.promise;
        return `${job} done`;
      },
      // The ledger is asked by key: the paused worker's execution took effect.
      reconcile: async ({ job }, { idempotencyKey }) =>
        executions.includes(idempotencyKey)
          ? { status: 'done', output: `${job} done` }
          : { status: 'not-done' },
    });
    const frozen = freezable(database.open());
    const a = worker('a', work, { leaseMs: 60_000, store: frozen.store });
    const turn = await a.send({ sessionId: 's1', text: 'go' });
    await until(turn, isFactOf('tool.started'));
    frozen.freeze();
    const admin = database.pool();
    await admin.query(
      `UPDATE "${database.schema}".leases SET expires_at = clock_timestamp() - interval '1 second' WHERE session_id = 's1'`,
    );
    await admin.end();
    worker('b', work, { leaseMs: 2_000 });
    // Nobody decides: b's takeover checks the call with reconcile and the run goes on.
    const reader = database.open();
    await expect
      .poll(async () => (await reader.read('s1')).at(-1)?.type, { timeout: 20_000 })
      .toBe('run.ended');
    held.resolve();
    frozen.thaw();
    expect(await turn.done).toMatchObject({ status: 'completed', text: 'All done.' });
    const facts = await reader.read('s1');
    expect(facts.find((fact) => fact.type === 'tool.reconciled')).toMatchObject({
      answer: 'done',
      workerId: 'b',
    });
    expect(facts.find((fact) => fact.type === 'tool.settled')).toMatchObject({
      outcome: 'success',
      text: 'j1 done',
      workerId: 'b',
    });
    expect(
      facts.filter((fact) => fact.type === 'tool.permission.decided' && fact.by === 'user'),
    ).toEqual([]);
    expect(executions).toHaveLength(1);
  });

  it('keeps serving its other runs after losing one, whose handle follows it on the new driver', async () => {
    const work = workTool();
    const release = work.hold();
    const a = worker('a', work.tool, { leaseMs: 600 });
    const lost = await a.send({ sessionId: 's1', text: 'go' });
    const kept = await a.send({ sessionId: 's2', text: 'go' });
    await until(lost, isFactOf('tool.started'));
    await until(kept, isFactOf('tool.started'));
    // s1's lease runs out by the database's clock (as if a renewal had come too late).
    const admin = database.pool();
    await admin.query(
      `UPDATE "${database.schema}".leases SET expires_at = clock_timestamp() - interval '1 second' WHERE session_id = 's1'`,
    );
    await admin.end();
    const b = worker('b', work.tool, { leaseMs: 600 });
    const reader = database.open();
    await expect
      .poll(async () => (await reader.read('s1')).some((fact) => fact.type === 'run.recovered'), {
        timeout: 10_000,
      })
      .toBe(true);
    release();
    expect(await kept.done).toMatchObject({ status: 'completed', text: 'All done.' });
    expect(writers(await reader.read('s2'))).toEqual(['a/1']);
    await b.decide({ sessionId: 's1', callId: 'call_w', decision: 'report-unknown' });
    expect(await lost.done).toMatchObject({ status: 'completed', text: 'All done.' });
    const facts = await reader.read('s1');
    // Taken over under epoch 2 by b, or by a's own scan (a lapsed lease is anyone's): either
    // way nothing of epoch 1 came after the takeover, and a's late result was refused.
    const takeover = facts.findIndex((fact) => (fact.leaseEpoch ?? 0) > 1);
    expect(writers(facts.slice(0, takeover))).toEqual(['a/1']);
    expect(facts.slice(takeover).filter((fact) => fact.leaseEpoch === 1)).toEqual([]);
    expect(facts.find((fact) => fact.type === 'tool.indeterminate')?.leaseEpoch).toBe(2);
    expect(work.executions).toEqual(['j1', 'j1']);
  });

  it('recover() leaves a run another worker leases alone, and close() hands runs over at once', async () => {
    const work = workTool();
    const release = work.hold();
    const a = worker('a', work.tool, { leaseMs: 2_000 });
    const turn = await a.send({ sessionId: 's1', text: 'go' });
    await until(turn, isFactOf('tool.started'));
    const b = worker('b', work.tool, { leaseMs: 2_000 });
    expect(await b.recover()).toEqual([]);
    await a.close();
    release();
    const reader = database.open();
    await expect
      .poll(async () => (await reader.read('s1')).at(-1)?.type, { timeout: 10_000 })
      .toBe('run.recovered');
    const facts = await reader.read('s1');
    expect(writers(facts)).toEqual(['a/1', 'b/2']);
    expect(facts.filter((fact) => fact.type === 'tool.indeterminate')).toHaveLength(1);
  });
});

/** A store whose calls wait while frozen: a worker that stopped (SIGSTOP) and wakes up later. */
function freezable(store: PostgresStore) {
  let gate: Promise<void> | undefined;
  let open: () => void = () => {};
  const wrapped = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      if (key === 'subscribe' || key === 'subscribeInbox' || key === 'close')
        return value.bind(target);
      return async (...args: unknown[]) => {
        while (gate !== undefined) await gate;
        return value.apply(target, args);
      };
    },
  });
  return {
    store: wrapped,
    freeze() {
      gate = new Promise((resolve) => {
        open = resolve;
      });
    },
    thaw() {
      gate = undefined;
      open();
    },
  };
}

/**
 * A store whose inbox settlements wait until `release()` (the driver settles a request after
 * doing it; the run may end meanwhile): `reached` resolves when the first one is made.
 */
function holdingSettlement(store: PostgresStore) {
  const reached = deferred();
  const gate = deferred();
  const wrapped = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (key === 'settleInboxItem') {
        return async (...args: Parameters<PostgresStore['settleInboxItem']>) => {
          reached.resolve();
          await gate.promise;
          return target.settleInboxItem(...args);
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store: wrapped, reached: reached.promise, release: () => gate.resolve() };
}

/**
 * A store whose append of a batch holding a fact of `type` commits, then holds its answer (a
 * driver whose write landed while its process was paused): the driver's copy of the log lags the
 * store. `releaseOnInboxDelivery()` lets the answer go just after the next inbox request reaches
 * the worker (after the work that delivery starts without waiting for I/O).
 */
function holdingAppendOf(store: PostgresStore, type: string) {
  const gate = deferred();
  let releaseOnDelivery = false;
  const wrapped = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (key === 'append') {
        return async (...args: Parameters<PostgresStore['append']>) => {
          const result = await target.append(...args);
          if (args[1].some((fact) => fact.type === type)) await gate.promise;
          return result;
        };
      }
      if (key === 'subscribeInbox') {
        return (sessionId: string, listener: Parameters<PostgresStore['subscribeInbox']>[1]) =>
          target.subscribeInbox(sessionId, (item) => {
            listener(item);
            if (releaseOnDelivery) setImmediate(() => gate.resolve());
          });
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return {
    store: wrapped,
    releaseOnInboxDelivery() {
      releaseOnDelivery = true;
    },
  };
}
