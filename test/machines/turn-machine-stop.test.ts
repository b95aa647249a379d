import { describe, expect, it } from 'vitest';
import type { ProposedFact } from '../../events/facts.ts';
import {
  allow,
  call,
  drive,
  failed,
  settled,
  started,
  stepCompleted,
  stepStarted,
} from './turn-machine-drive.ts';

describe('turnMachine: stop wins from every non-terminal state (I10)', () => {
  const stop: ProposedFact = { type: 'run.stop.requested', reason: 'user' };
  const aborted = { status: 'aborted', reason: 'stop_requested' };

  it.each([
    ['projecting', []],
    ['compacting', [{ type: 'compaction.started', reason: 'budget' }]],
    ['requesting.streaming', [stepStarted()]],
    ['requesting.backingOff', [stepStarted(), failed('rate_limit')]],
  ] as [string, ProposedFact[]][])('ends at once from %s', (state, before) => {
    const run = drive();
    for (const draft of before) run.send(draft);
    expect(run.state()).toBe(state);
    expect(run.send(stop)).toBe('terminal');
    expect(run.actor.getSnapshot().output).toEqual(aborted);
    expect(run.can(stepCompleted())).toBe(false);
  });

  it('from settlingTools.deciding: every call is abandoned as cancelled', () => {
    const run = drive();
    run.send(stepStarted());
    run.send(stepCompleted([call('c1'), call('c2')]));
    expect(run.send(stop)).toBe('settlingTools.stopping');
    const abandoners = run.started.filter(
      (actor) => (actor.input as { phase?: string }).phase === 'abandon',
    );
    expect(abandoners.map((actor) => actor.input)).toMatchObject([
      { callId: 'c1', outcome: 'cancelled' },
      { callId: 'c2', outcome: 'cancelled' },
    ]);
    expect(run.can(allow('c1'))).toBe(false);
    run.send({ ...settled('c1'), outcome: 'cancelled' } as ProposedFact);
    expect(run.send({ ...settled('c2'), outcome: 'cancelled' } as ProposedFact)).toBe('terminal');
    expect(run.actor.getSnapshot().output).toEqual(aborted);
  });

  it('from settlingTools.running: a started call keeps its settlement, the others are cancelled', () => {
    const run = drive();
    run.send(stepStarted());
    run.send(stepCompleted([call('c1'), call('c2')]));
    run.send(allow('c1'));
    run.send(allow('c2'));
    run.send(started('c1'));
    expect(run.send(stop)).toBe('settlingTools.stopping');
    const abandoners = run.started.filter(
      (actor) => (actor.input as { phase?: string }).phase === 'abandon',
    );
    expect(abandoners.map((actor) => (actor.input as { callId: string }).callId)).toEqual(['c2']);
    expect(run.can(started('c2'))).toBe(false);
    run.send({ ...settled('c2'), outcome: 'cancelled' } as ProposedFact);
    expect(run.send({ ...settled('c1'), outcome: 'unknown' } as ProposedFact)).toBe('terminal');
    expect(run.can(settled('c1'))).toBe(false);
  });

  it('from awaitingPermission', () => {
    const run = drive();
    run.send(stepStarted());
    run.send(stepCompleted([call('c1')]));
    run.send({
      type: 'tool.permission.requested',
      callId: 'c1',
      name: 'echo',
      input: {},
      inputHash: 'hash-c1',
    });
    expect(run.send(stop)).toBe('settlingTools.stopping');
    expect(run.send({ ...settled('c1'), outcome: 'cancelled' } as ProposedFact)).toBe('terminal');
    expect(run.actor.getSnapshot().output).toEqual(aborted);
  });

  it('an abort decision ends the run aborted', () => {
    const run = drive();
    run.send(stepStarted());
    run.send(stepCompleted([call('c1')]));
    run.send({
      type: 'tool.permission.requested',
      callId: 'c1',
      name: 'echo',
      input: {},
      inputHash: 'hash-c1',
    });
    expect(
      run.send({
        type: 'tool.permission.decided',
        callId: 'c1',
        decision: 'abort',
        inputHash: 'hash-c1',
        by: 'user',
      }),
    ).toBe('settlingTools.stopping');
    expect(run.send({ ...settled('c1'), outcome: 'cancelled' } as ProposedFact)).toBe('terminal');
    expect(run.actor.getSnapshot().output).toEqual({
      status: 'aborted',
      reason: 'permission_abort',
    });
  });

  it('a second stop while stopping is not a transition', () => {
    const run = drive();
    run.send(stepStarted());
    run.send(stepCompleted([call('c1')]));
    run.send(stop);
    expect(run.can(stop)).toBe(false);
  });
});
