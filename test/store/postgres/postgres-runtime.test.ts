import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../../adapters/scripted-model.ts';
import { sequentialIds } from '../../../events/ids.ts';
import { defineTool } from '../../../tools/define-tool.ts';
import { testSchema } from '../../helpers/postgres.ts';
import { addTool, isFactOf, testRuntime, until } from '../../runtime/runtime-helpers.ts';

// Today's runtime (one worker, no leases) on postgresStore: what works on the file store works here.
describe('a runtime on postgresStore', () => {
  let database: ReturnType<typeof testSchema>;

  beforeEach(() => {
    database = testSchema('runtime');
  });

  afterEach(() => database.drop());

  /** The session's run as a worker that died holding its lease leaves it: held, and expired. */
  async function diedHolding(workerId: string, sessionId: string): Promise<void> {
    const admin = database.pool();
    await admin.query(
      `UPDATE "${database.schema}".leases SET worker_id = $1,
         expires_at = clock_timestamp() - interval '1 second' WHERE session_id = $2`,
      [workerId, sessionId],
    );
    await admin.end();
  }

  it("runs the quickstart's turn end to end and keeps its log", async () => {
    const calls: string[] = [];
    const getWeather = defineTool({
      description: 'The current weather in a city.',
      inputSchema: z.object({ city: z.string() }),
      execute: ({ city }) => {
        calls.push(city);
        return `${city}: 18 °C, sunny, light wind`;
      },
    });
    const model = scriptedModel([
      { text: 'Let me check.', toolCalls: [{ name: 'getWeather', input: { city: 'Paris' } }] },
      { text: ['It is 18 °C and sunny ', 'in Paris: a good day for a walk.'] },
    ]);
    const runtime = testRuntime(database.open(), { model, tools: { getWeather } });
    const turn = await runtime.send({ sessionId: 'quickstart', text: 'Weather in Paris?' });
    const streamed: string[] = [];
    for await (const event of turn.events)
      if (event.type === 'text.delta') streamed.push(event.text);
    expect(await turn.done).toMatchObject({
      status: 'completed',
      reason: 'end_turn',
      steps: 2,
      text: 'It is 18 °C and sunny in Paris: a good day for a walk.',
    });
    expect(streamed.join('')).toBe(
      'Let me check.It is 18 °C and sunny in Paris: a good day for a walk.',
    );
    expect(calls).toEqual(['Paris']);
    await runtime.close();

    const facts = await database.open().read('quickstart');
    expect(facts.map((fact) => [fact.seq, fact.type, fact.state])).toEqual([
      [1, 'run.started', 'projecting'],
      [2, 'step.started', 'requesting.streaming'],
      [3, 'step.completed', 'settlingTools.deciding'],
      [4, 'tool.permission.decided', 'settlingTools.running'],
      [5, 'tool.started', 'settlingTools.running'],
      [6, 'tool.settled', 'projecting'],
      [7, 'step.started', 'requesting.streaming'],
      [8, 'step.completed', 'terminal'],
      [9, 'run.ended', 'terminal'],
    ]);
    // Each runtime on a shared store is a worker: every fact it appended carries its lease.
    expect(runtime.worker?.id).toMatch(/^worker-/);
    expect(new Set(facts.map((fact) => `${fact.workerId}/${fact.leaseEpoch}`))).toEqual(
      new Set([`${runtime.worker?.id}/1`]),
    );
  });

  it('parks on a permission, and a new runtime on a new store recovers the run and finishes it', async () => {
    const generateId = sequentialIds();
    const { tool, executions } = addTool('ask');
    const first = testRuntime(database.open(), {
      generateId,
      model: scriptedModel([{ toolCalls: [{ name: 'add', input: { a: 1, b: 2 } }] }]),
      tools: { add: tool },
    });
    const turn = await first.send({ sessionId: 's1', text: 'add 1 and 2' });
    await until(turn, isFactOf('tool.permission.requested'));
    const pending = await first.pending('s1');
    await first.close();
    expect(executions).toEqual([]);

    const second = testRuntime(database.open(), {
      generateId,
      model: scriptedModel([{ text: 'Three.' }]),
      tools: { add: tool },
    });
    // Parked and released by its worker: a worker's recover() leaves it to its decision.
    expect(await second.recover()).toEqual([]);
    // As if the first worker had died between parking the run and releasing its lease.
    await diedHolding(first.worker?.id ?? '', 's1');
    const [report] = await second.recover();
    expect(report).toMatchObject({
      sessionId: 's1',
      interruptedIn: 'awaitingPermission',
      status: 'parked',
    });
    expect(await second.pending('s1')).toEqual(pending);
    await second.decide({ sessionId: 's1', callId: 'call_1', decision: 'allow' });
    if (report === undefined || report.status === 'damaged') throw new Error('not recovered');
    expect(await report.turn.done).toMatchObject({ status: 'completed', text: 'Three.' });
    expect(executions).toEqual([{ a: 1, b: 2 }]);
    const types = (await second.facts('s1')).map((fact) => fact.type);
    expect(types.filter((type) => type === 'run.recovered')).toHaveLength(1);
    expect(types.at(-1)).toBe('run.ended');
    await second.close();
  });

  it('on a worker, recovers a run the runs index leaves out from its facts (the log is the truth); openRuns() reports the session', async () => {
    const generateId = sequentialIds();
    const { tool } = addTool('ask');
    const first = testRuntime(database.open(), {
      generateId,
      model: scriptedModel([
        { toolCalls: [{ name: 'add', input: { a: 1, b: 2 } }] },
        { toolCalls: [{ name: 'add', input: { a: 3, b: 4 } }] },
      ]),
      tools: { add: tool },
    });
    for (const sessionId of ['fine', 'hidden']) {
      const turn = await first.send({ sessionId, text: 'add' });
      await until(turn, isFactOf('tool.permission.requested'));
    }
    await first.close();
    const admin = database.pool();
    await admin.query(`DELETE FROM "${database.schema}".runs WHERE session_id = 'hidden'`);
    await admin.end();
    // Both as if their worker had died before releasing their leases.
    for (const sessionId of ['fine', 'hidden']) {
      await diedHolding(first.worker?.id ?? '', sessionId);
    }

    const second = testRuntime(database.open(), {
      generateId,
      model: scriptedModel([]),
      tools: { add: tool },
    });
    // A worker's recover() reads the expired leases and the log, not the runs index.
    const reports = await second.recover();
    expect(reports.map((report) => [report.sessionId, report.status])).toEqual([
      ['fine', 'parked'],
      ['hidden', 'parked'],
    ]);
    await second.close();
    // openRuns() (turnlog check, checkDeploy) checks the index against the log, and says so.
    const reader = database.open();
    expect((await reader.openRuns()).map((run) => run.sessionId)).toEqual(['fine']);
    const [hidden] = await reader.findings();
    expect(hidden?.message).toMatch(
      /^postgresStore: session hidden in runtime_\w+\.runs: run \S+ is unfinished in runtime_\w+\.facts \(its run\.started is seq 1, with no run\.ended\) but the runs index does not list it as open/,
    );
  });
});
