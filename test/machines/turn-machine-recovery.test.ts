import { describe, expect, it } from 'vitest';
import type { ProposedFact } from '../../events/facts.ts';
import {
  allow,
  call,
  drive,
  settled,
  started,
  stepCompleted,
  stepStarted,
} from './turn-machine-drive.ts';

describe('turnMachine: recovery', () => {
  it('an interrupted request becomes a new attempt of the same step', () => {
    const run = drive();
    run.send(stepStarted());
    expect(
      run.send({ type: 'run.recovered', interrupted: 'requesting.streaming', indeterminate: [] }),
    ).toBe('projecting');
    expect(run.started.at(-1)).toMatchObject({
      src: 'prepareStep',
      input: { retry: { stepId: 'step_1', attempt: 2 } },
    });
  });

  it('a crash while stopping: the started call becomes indeterminate and is abandoned as unknown', () => {
    const run = drive();
    run.send(stepStarted());
    run.send(stepCompleted([call('c1'), call('c2')]));
    run.send(allow('c1'));
    run.send(allow('c2'));
    run.send(started('c1'));
    run.send({ type: 'run.stop.requested', reason: 'user' });
    run.send({ ...settled('c2'), outcome: 'cancelled' } as ProposedFact);
    expect(run.send({ type: 'tool.indeterminate', callId: 'c1', name: 'echo' })).toBe(
      'settlingTools.stopping',
    );
    expect(
      run.send({
        type: 'run.recovered',
        interrupted: 'settlingTools.stopping',
        indeterminate: ['c1'],
      }),
    ).toBe('settlingTools.stopping');
    expect(run.started.at(-1)).toMatchObject({
      src: 'settleTool',
      input: { phase: 'abandon', callId: 'c1', outcome: 'unknown' },
    });
    expect(run.send({ ...settled('c1'), outcome: 'unknown' } as ProposedFact)).toBe('terminal');
    expect(run.actor.getSnapshot().output).toEqual({
      status: 'aborted',
      reason: 'stop_requested',
    });
  });

  it('a write cut after step.completed: recovery decides the calls the log has no decision for', () => {
    const run = drive();
    run.send(stepStarted());
    run.send(stepCompleted([call('c1'), call('c2')]));
    run.send(allow('c1'));
    expect(
      run.send({
        type: 'run.recovered',
        interrupted: 'settlingTools.deciding',
        indeterminate: [],
      }),
    ).toBe('settlingTools.deciding');
    expect(
      run.started.filter((actor) => actor.src === 'settleTool').map((actor) => actor.input),
    ).toEqual([
      { phase: 'decide', sessionId: 'session_1', runId: 'run_1', stepId: 'step_1', callId: 'c2' },
    ]);
    expect(run.send(allow('c2'))).toBe('settlingTools.running');
  });

  it('a started, unsettled call becomes indeterminate and waits for report-unknown', () => {
    const run = drive();
    run.send(stepStarted());
    run.send(stepCompleted([call('c1'), call('c2')]));
    run.send(allow('c1'));
    run.send(allow('c2'));
    run.send(started('c1'));
    expect(run.send({ type: 'tool.indeterminate', callId: 'c1', name: 'echo' })).toBe(
      'settlingTools.running',
    );
    expect(
      run.send({
        type: 'run.recovered',
        interrupted: 'settlingTools.running',
        indeterminate: ['c1'],
      }),
    ).toBe('awaitingPermission');
    expect(run.can(allow('c1', 'user'))).toBe(false);
    expect(
      run.send({
        type: 'tool.permission.decided',
        callId: 'c1',
        decision: 'report-unknown',
        inputHash: 'hash-c1',
        by: 'user',
      }),
    ).toBe('settlingTools.running');
    const runners = run.started.filter(
      (actor) => (actor.input as { phase?: string }).phase === 'run',
    );
    // c2 (never started) settles normally; c1 is settled from its report-unknown decision, never re-run.
    expect(runners.slice(-2).map((actor) => actor.input)).toMatchObject([
      { callId: 'c1', decision: { decision: 'report-unknown' } },
      { callId: 'c2', decision: { decision: 'allow' } },
    ]);
  });
});
