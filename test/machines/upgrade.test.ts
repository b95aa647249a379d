import { describe, expect, it } from 'vitest';
import { createMachine } from 'xstate';
import { z } from 'zod';
import { aiSdkAdapter } from '../../adapters/ai-sdk-adapter.ts';
import { type ScriptedStep, scriptedModel } from '../../adapters/scripted-model.ts';
import type { Fact, FactOf } from '../../events/facts.ts';
import { type IdGenerator, sequentialIds } from '../../events/ids.ts';
import { LiveRuns, type RecoveredRun } from '../../machines/effects/live-runs.ts';
import { foldRun, ReplayDivergenceError, rehydrateRun } from '../../machines/pure/rehydrate.ts';
import { statePath } from '../../machines/pure/state-path.ts';
import type { TurnMachine } from '../../machines/pure/turn-machine.ts';
import { turnMachine } from '../../machines/pure/turn-machine.ts';
import type { EventStore } from '../../store/event-store.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import type { ToolSet } from '../../tools/tool.ts';
import { createToolSetSource } from '../../tools/tool-set-source.ts';
import { loadSampleLog } from '../events/sample-logs.ts';
import { addTool, isFactOf, testRuntime, until } from '../runtime/runtime-helpers.ts';

/**
 * The next version of the turn machine, as an upgrade would ship it: one extra state. A request
 * is now sent from `requesting.sending` (a copy of `streaming`), so every `step.started` leads to
 * a state no earlier log recorded, and replaying any earlier log through it diverges.
 */
function nextMachineVersion(): TurnMachine {
  type StateConfig = { on: object; states: { streaming: object } };
  const config = turnMachine.config as unknown as { states: Record<string, StateConfig> };
  const { projecting, requesting } = config.states as {
    projecting: StateConfig;
    requesting: StateConfig;
  };
  const copy = {
    ...config,
    version: '6',
    states: {
      ...config.states,
      projecting: {
        ...projecting,
        on: {
          ...projecting.on,
          'step.started': { target: 'requesting.sending', actions: 'startStep' },
        },
      },
      requesting: {
        ...requesting,
        states: { ...requesting.states, sending: requesting.states.streaming },
      },
    },
  };
  return createMachine(copy as never, turnMachine.implementations as never) as never;
}

const upgraded = nextMachineVersion();

/** A live-runs instance (what the runtime drives) on `machine`: a "new turnlog" resuming a log. */
function liveRunsOn(
  store: EventStore,
  machine: TurnMachine,
  options: { steps: ScriptedStep[]; tools: ToolSet; generateId?: IdGenerator },
) {
  const runs = new LiveRuns({
    store,
    adapter: aiSdkAdapter(scriptedModel(options.steps)),
    tools: createToolSetSource({ tools: options.tools, policy: undefined }),
    system: undefined,
    now: () => Date.UTC(2026, 10, 2),
    generateId: options.generateId ?? sequentialIds(),
    random: () => 0.5,
    inspect: undefined,
    closedError: () => new Error('closed'),
    machine,
  });
  // The session registry serializes work on a session (parking included), as the runtime does.
  const { withSession } = runs;
  return {
    recover: (sessionId: string, runId: string) =>
      withSession(sessionId, () => runs.recover(sessionId, runId)),
    /** Commits a person's decision the way `runtime.decide()` does. */
    decide: (
      fact: FactOf<'tool.permission.requested' | 'tool.started'>,
      decision: 'allow' | 'report-unknown',
    ) =>
      withSession(fact.sessionId, async () => {
        const driver = await runs.active(fact.sessionId);
        if (driver === undefined || 'elsewhere' in driver) return undefined;
        return driver.commit({
          type: 'tool.permission.decided',
          callId: fact.callId,
          decision,
          inputHash: fact.inputHash,
          by: 'user',
        });
      }),
  };
}

/** A tool of the sample logs' name that records its executions and accepts any object. */
function recordingTool(name: string, executions: string[]) {
  return defineTool({
    description: `${name} (test stand-in)`,
    inputSchema: z.looseObject({}),
    execute: () => {
      executions.push(name);
      return 'done';
    },
  });
}

function resumed(report: RecoveredRun | undefined) {
  if (report === undefined || report.status === 'damaged') {
    throw new Error(`not resumable: ${JSON.stringify(report)}`);
  }
  return report;
}

const transitions = (facts: readonly Fact[], fromSeq: number) =>
  facts.filter((fact) => fact.seq > fromSeq).map((fact) => `${fact.type} → ${fact.state}`);

const permission = loadSampleLog('permission');
const parked = permission.slice(0, 4); // run 1 waits for the person at seq 4
const interrupted = loadSampleLog('interrupted-tool');
const textOnly = loadSampleLog('text-only');
const midRequest = textOnly.slice(0, 2); // run 1's request in flight: seq 2, requesting.streaming

describe('a run begun by an older turn machine resumes on a newer one', () => {
  it('finds that a strict replay of the old logs diverges on the new machine', () => {
    expect(() => foldRun(midRequest, midRequest[0]?.runId ?? '', upgraded)).toThrowError(
      /fact seq 2 \(step\.started\) recorded state requesting\.streaming, but the turn machine reaches requesting\.sending/,
    );
  });

  it.each([
    ['parked (permission.jsonl at seq 4)', parked, 'awaitingPermission'],
    ['in flight (interrupted-tool.jsonl)', interrupted, 'settlingTools.running'],
    ['mid-request (text-only.jsonl at seq 2)', midRequest, 'requesting.streaming'],
  ])(
    'rebuilds the %s run in its recorded state, with the context the log implies',
    (_name, facts, state) => {
      const runId = facts[0]?.runId ?? '';
      const rebuilt = rehydrateRun(facts, runId, upgraded);
      expect(rebuilt.path).toBe('upgraded');
      expect(statePath(rebuilt.snapshot.value)).toBe(state);
      // Only the path to a state changed: the new machine's actions give the old one's context.
      expect(rebuilt.snapshot.context).toEqual(foldRun(facts, runId).snapshot.context);
    },
  );

  it('resumes the parked 0.1.0 run: the decision runs the call, the next request goes through the new state', async () => {
    const executions: string[] = [];
    const store = memoryStore({ facts: parked });
    const runs = liveRunsOn(store, upgraded, {
      steps: [{ text: 'Cleaned.' }],
      tools: { runCommand: recordingTool('runCommand', executions) },
    });
    const report = resumed(await runs.recover(parked[0]?.sessionId ?? '', parked[0]?.runId ?? ''));
    expect(report.status).toBe('parked');
    const asked = parked[3] as FactOf<'tool.permission.requested'>;
    expect(await runs.decide(asked, 'allow')).toBe(true);
    expect(await report.turn.done).toMatchObject({ status: 'completed', text: 'Cleaned.' });
    expect(executions).toEqual(['runCommand']);
    expect(transitions(await store.read(asked.sessionId), 4)).toEqual([
      'run.recovered → awaitingPermission',
      'tool.permission.decided → settlingTools.running',
      'tool.started → settlingTools.running',
      'tool.settled → projecting',
      'step.started → requesting.sending',
      'step.completed → terminal',
      'run.ended → terminal',
    ]);
  });

  it('resumes the in-flight 0.1.0 run without running its started call again', async () => {
    const executions: string[] = [];
    const store = memoryStore({ facts: interrupted });
    const runs = liveRunsOn(store, upgraded, {
      steps: [{ text: 'Posted to the feed.' }],
      tools: { httpPost: recordingTool('httpPost', executions) },
    });
    const [first] = interrupted;
    const report = resumed(await runs.recover(first?.sessionId ?? '', first?.runId ?? ''));
    expect(report).toMatchObject({ status: 'parked', indeterminate: [expect.any(String)] });
    expect(await runs.decide(interrupted[5] as FactOf<'tool.started'>, 'report-unknown')).toBe(
      true,
    );
    expect(await report.turn.done).toMatchObject({ status: 'completed' });
    // The started call stays unknown (I8); only the call that provably never ran runs now.
    expect(executions).toEqual(['httpPost']);
    expect(transitions(await store.read(first?.sessionId ?? ''), 6)).toEqual([
      'tool.indeterminate → settlingTools.running',
      'run.recovered → awaitingPermission',
      'tool.permission.decided → settlingTools.running',
      'tool.settled → settlingTools.running',
      'tool.started → settlingTools.running',
      'tool.settled → projecting',
      'step.started → requesting.sending',
      'step.completed → terminal',
      'run.ended → terminal',
    ]);
  });

  it('resumes the mid-request 0.1.0 run as a recorded new attempt in the new state', async () => {
    const store = memoryStore({ facts: midRequest });
    const runs = liveRunsOn(store, upgraded, {
      steps: [{ text: 'It runs agent turns durably.' }],
      tools: {},
    });
    const [first] = midRequest;
    const report = resumed(await runs.recover(first?.sessionId ?? '', first?.runId ?? ''));
    expect(report.status).toBe('resumed');
    expect(await report.turn.done).toMatchObject({ text: 'It runs agent turns durably.' });
    const facts = await store.read(first?.sessionId ?? '');
    expect(transitions(facts, 2)).toEqual([
      'run.recovered → projecting',
      'step.started → requesting.sending',
      'step.completed → terminal',
      'run.ended → terminal',
    ]);
    expect((facts[3] as FactOf<'step.started'>).attempt).toBe(2);
  });

  it('resumes runs the current turnlog records (machine version 5) on the new machine', async () => {
    const store = memoryStore();
    const generateId = sequentialIds();
    const { tool, executions } = addTool('ask');
    const today = testRuntime(store, {
      generateId,
      model: scriptedModel([{ toolCalls: [{ name: 'add', input: { a: 1, b: 2 } }] }]),
      tools: { add: tool },
    });
    const turn = await today.send({ sessionId: 's1', text: 'add' });
    await until(turn, isFactOf('tool.permission.requested'));
    const log = await store.read('s1');
    expect(log[0]).toMatchObject({ type: 'run.started', machineVersion: '5' });

    const runs = liveRunsOn(store, upgraded, {
      steps: [{ text: 'Three.' }],
      tools: { add: tool },
      generateId,
    });
    const report = resumed(await runs.recover('s1', turn.runId));
    expect(report.status).toBe('parked');
    const asked = log.find(
      isFactOf('tool.permission.requested'),
    ) as FactOf<'tool.permission.requested'>;
    expect(await runs.decide(asked, 'allow')).toBe(true);
    expect(await report.turn.done).toMatchObject({ status: 'completed', text: 'Three.' });
    expect(executions).toEqual([{ a: 1, b: 2 }]);
    expect(transitions(await store.read('s1'), log.length)).toContain(
      'step.started → requesting.sending',
    );
  });

  it('replays strictly when the versions match, and refuses a run begun by a newer machine', () => {
    const facts = interrupted.map((fact) =>
      fact.type === 'run.started' ? { ...fact, machineVersion: '5' } : fact,
    );
    const runId = facts[0]?.runId ?? '';
    expect(rehydrateRun(facts, runId).path).toBe('replayed');
    expect(() => rehydrateRun(facts, runId, upgraded)).not.toThrow();
    const newer = facts.map((fact) =>
      fact.type === 'run.started' ? { ...fact, machineVersion: '7' } : fact,
    );
    expect(() => rehydrateRun(newer, runId, upgraded)).toThrowError(
      /was begun by turn machine version 7, newer than this turnlog's \(6\); resume it with the turnlog that began it/,
    );
  });

  it('reports a recorded state the new machine does not have, naming it', () => {
    const facts = parked.map((fact) =>
      fact.seq === 4 ? { ...fact, state: 'awaitingApproval' } : fact,
    );
    const error = (() => {
      try {
        rehydrateRun(facts, facts[0]?.runId ?? '', upgraded);
      } catch (caught) {
        return caught;
      }
    })();
    expect(ReplayDivergenceError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ seq: 4, recorded: 'awaitingApproval' });
  });
});
