import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../../adapters/scripted-model.ts';
import type { Fact } from '../../../events/facts.ts';
import { sequentialIds } from '../../../events/ids.ts';
import type { Runtime } from '../../../runtime.ts';
import { defineTool } from '../../../tools/define-tool.ts';
import { calibrate, scaled } from '../../helpers/calibration.ts';
import { testSchema } from '../../helpers/postgres.ts';
import { testRuntime } from '../../runtime/runtime-helpers.ts';

// A short lease, scaled to how loaded the machine is now (at most 5 s), and an event loop
// blocked for 2.5 leases: on the event loop alone, no renewal can be made through that.
const { slowdown } = calibrate();
const leaseMs = Math.min(5_000, scaled(1_000, slowdown));
const blockMs = 2.5 * leaseMs;
const outputChars = 20 * 1024 * 1024;

/** Blocks this thread's event loop (a tool that computes synchronously, a huge JSON). */
function blockEventLoop(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy
  }
}

/** Ids of a worker's own (two runtimes in one test must not both make `fact_1`). */
function ownIds(worker: string) {
  const ids = sequentialIds();
  return (prefix: string) => `${worker}_${ids(prefix)}`;
}

/** Resolves once the worker's leases are renewed from its thread. */
async function renewedFromThread(runtime: Runtime): Promise<void> {
  while (runtime.worker?.renewal !== 'thread') await new Promise((done) => setTimeout(done, 10));
}

/** The facts of the one run of a session, by type. */
function summary(facts: Fact[]) {
  const count = (type: Fact['type']) => facts.filter((fact) => fact.type === type).length;
  return {
    started: count('run.started'),
    steps: count('step.started'),
    recovered: count('run.recovered'),
    indeterminate: count('tool.indeterminate'),
    ended: facts.filter((fact) => fact.type === 'run.ended').map((fact) => fact.status),
    epochs: [...new Set(facts.map((fact) => `${fact.workerId}/${fact.leaseEpoch}`))],
  };
}

// Issue 26, defect 5: a 50 MB tool output under a 1–3 s lease, at load 17–22, lost the lease
// (the event loop blocked seconds before the append, the append took seconds more, the next
// request carrying the output blocked it again): the worker took its own run over, re-sent the
// request and the run ended failed/interrupted.
describe('leases under a blocked event loop and a large tool output (postgresStore)', () => {
  let database: ReturnType<typeof testSchema>;
  const runtimes: Runtime[] = [];

  beforeEach(() => {
    database = testSchema('lease_starved');
  });

  afterEach(async () => {
    await Promise.all(runtimes.splice(0).map((runtime) => runtime.close()));
    await database.drop();
  });

  it(
    `keeps the lease of a run whose tool blocks the loop past the lease and returns 20 MB: succeeded, no takeover, no request re-sent`,
    async () => {
      let executions = 0;
      const fetchPage = defineTool({
        description: 'Fetches a page.',
        inputSchema: z.object({ url: z.string() }),
        execute: async () => {
          executions += 1;
          // The thread is up (it starts with the runtime): then the loop is blocked past the lease.
          await renewedFromThread(driver);
          blockEventLoop(blockMs);
          return 'x'.repeat(outputChars);
        },
      });
      const model = scriptedModel([
        { toolCalls: [{ name: 'fetchPage', input: { url: 'https://example.com/big' } }] },
        { text: 'The page is large.' },
      ]);
      const options = {
        model,
        tools: { fetchPage },
        limits: { toolOutputChars: outputChars + 1_000 },
      };
      const driver = testRuntime(database.open(), { ...options, worker: { id: 'w1', leaseMs } });
      // Another worker scanning for expired leases: a lapse would be a takeover.
      const other = testRuntime(database.open(), {
        ...options,
        generateId: ownIds('w2'),
        worker: { id: 'w2', leaseMs },
      });
      runtimes.push(driver, other);
      expect(driver.worker?.renewal).toBe('loop');

      const turn = await driver.send({ sessionId: 's1', text: 'fetch the big page' });
      expect(await turn.done).toMatchObject({ status: 'completed', steps: 2 });

      const facts = await database.open().read('s1');
      expect(summary(facts)).toEqual({
        started: 1,
        steps: 2,
        recovered: 0,
        indeterminate: 0,
        ended: ['completed'],
        epochs: ['w1/1'],
      });
      expect(executions).toBe(1);
      // Both requests, once each: the second one carrying the 20 MB output.
      expect(model.requests).toHaveLength(2);
      const settled = facts.find((fact) => fact.type === 'tool.settled');
      expect(settled?.type === 'tool.settled' && settled.text.length).toBe(outputChars);
    },
    120_000 + 20 * blockMs,
  );

  it('gives up a run whose lease lapsed under a blocked loop (renewal on the loop): the other worker finishes it, the first never takes it back', async () => {
    // 1.3 leases: the lease lapses under the block (renewed at most a lease before it ends), and
    // at the block's end has been expired for less than a lease: not yet for its own worker.
    const shortBlockMs = 1.3 * leaseMs;
    let executions = 0;
    const fetchPage = defineTool({
      description: 'Fetches a page.',
      inputSchema: z.object({ url: z.string() }),
      idempotent: true,
      execute: async () => {
        executions += 1;
        if (executions === 1) blockEventLoop(shortBlockMs);
        return 'a page';
      },
    });
    const model = scriptedModel((request) =>
      request.prompt.some((message) => message.role === 'tool')
        ? { text: 'Done.' }
        : { toolCalls: [{ name: 'fetchPage', input: { url: 'https://example.com' } }] },
    );
    const options = { model, tools: { fetchPage } };
    const starved = testRuntime(database.open(), {
      ...options,
      worker: { id: 'w1', leaseMs, renewal: 'loop' },
    });
    const other = testRuntime(database.open(), {
      ...options,
      generateId: ownIds('w2'),
      worker: { id: 'w2', leaseMs },
    });
    runtimes.push(starved, other);

    const turn = await starved.send({ sessionId: 's1', text: 'fetch the page' });
    // Its handle follows the run to the worker that took it over.
    expect(await turn.done).toMatchObject({ status: 'completed', steps: 2 });
    const facts = await database.open().read('s1');
    expect(summary(facts)).toEqual({
      started: 1,
      steps: 2,
      recovered: 1,
      indeterminate: 1,
      ended: ['completed'],
      epochs: ['w1/1', 'w2/2'],
    });
    // The idempotent call ran again under w2 (its settlement by w1 was refused); no request twice.
    expect(executions).toBe(2);
    expect(model.requests).toHaveLength(2);
  }, 120_000);
});
