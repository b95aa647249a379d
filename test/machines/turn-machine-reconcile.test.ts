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

const marked = (callId: string, check?: 'reconcile' | 'idempotent'): ProposedFact => ({
  type: 'tool.indeterminate',
  callId,
  name: 'echo',
  ...(check && { check }),
});
const recovered = (interrupted: string, indeterminate: string[]): ProposedFact => ({
  type: 'run.recovered',
  interrupted,
  indeterminate,
});
const reconciled = (
  callId: string,
  answer: 'done' | 'not-done' | 'unknown' | 'idempotent',
  reason?: string,
): ProposedFact => ({
  type: 'tool.reconciled',
  callId,
  name: 'echo',
  answer,
  ...(reason && { reason }),
});

/** A run whose calls `ids` started (allowed by policy) when the process stopped. */
function crashedWhileRunning(ids: string[]) {
  const run = drive();
  run.send(stepStarted());
  run.send(stepCompleted(ids.map((id) => call(id))));
  for (const id of ids) run.send(allow(id));
  for (const id of ids) run.send(started(id));
  return run;
}

describe('turnMachine: checking calls that may have run, after a restart', () => {
  it('asks the tool before anyone: reconciling spawns one check per checkable call', () => {
    const run = crashedWhileRunning(['c1', 'c2']);
    expect(run.send(marked('c1', 'reconcile'))).toBe('settlingTools.running');
    expect(run.send(marked('c2'))).toBe('settlingTools.running');
    expect(run.send(recovered('settlingTools.running', ['c1', 'c2']))).toBe(
      'settlingTools.reconciling',
    );
    const checks = run.started.filter(
      (entry) => (entry.input as { phase?: string }).phase === 'reconcile',
    );
    expect(checks).toEqual([
      {
        src: 'settleTool',
        input: {
          phase: 'reconcile',
          recovery: 1,
          sessionId: 'session_1',
          runId: 'run_1',
          stepId: 'step_1',
          callId: 'c1',
        },
      },
    ]);
    // c2's tool cannot tell: once c1 is answered, a person is asked about c2.
    expect(run.send(reconciled('c1', 'not-done'))).toBe('awaitingPermission');
    expect(run.actor.getSnapshot().context.calls).toMatchObject([
      { callId: 'c1', status: 'decided', executions: 1, reconciled: { answer: 'not-done' } },
      { callId: 'c2', status: 'indeterminate', executions: 1 },
    ]);
  });

  it('done: the settlement in the same write settles the call and the run goes on', () => {
    const run = crashedWhileRunning(['c1']);
    run.send(marked('c1', 'reconcile'));
    run.send(recovered('settlingTools.running', ['c1']));
    // Still reconciling between the answer and the settlement of the same append.
    expect(run.send(reconciled('c1', 'done'))).toBe('settlingTools.reconciling');
    expect(run.send(settled('c1'))).toBe('projecting');
  });

  it('not-done: runs the call again once, as its second execution under the same decision', () => {
    const run = crashedWhileRunning(['c1']);
    run.send(marked('c1', 'reconcile'));
    run.send(recovered('settlingTools.running', ['c1']));
    expect(run.send(reconciled('c1', 'not-done'))).toBe('settlingTools.running');
    expect(run.started.at(-1)).toEqual({
      src: 'settleTool',
      input: {
        phase: 'run',
        decision: { decision: 'allow', inputHash: 'hash-c1', by: 'policy' },
        execution: 2,
        sessionId: 'session_1',
        runId: 'run_1',
        stepId: 'step_1',
        callId: 'c1',
      },
    });
    expect(run.send({ ...started('c1'), id: 'step_1:c1:started-2' } as ProposedFact)).toBe(
      'settlingTools.running',
    );
    expect(run.send(settled('c1'))).toBe('projecting');
  });

  it('idempotent: runs again without asking, like not-done', () => {
    const run = crashedWhileRunning(['c1']);
    run.send(marked('c1', 'idempotent'));
    run.send(recovered('settlingTools.running', ['c1']));
    expect(run.send(reconciled('c1', 'idempotent'))).toBe('settlingTools.running');
    expect(run.started.at(-1)).toMatchObject({ input: { phase: 'run', execution: 2 } });
  });

  it('unknown: a person is asked, and may answer report-unknown', () => {
    const run = crashedWhileRunning(['c1']);
    run.send(marked('c1', 'reconcile'));
    run.send(recovered('settlingTools.running', ['c1']));
    expect(run.send(reconciled('c1', 'unknown', 'the ledger is down'))).toBe('awaitingPermission');
    expect(run.actor.getSnapshot().context.calls[0]?.reconciled).toEqual({
      answer: 'unknown',
      reason: 'the ledger is down',
    });
    expect(
      run.send({
        type: 'tool.permission.decided',
        callId: 'c1',
        decision: 'report-unknown',
        inputHash: 'hash-c1',
        by: 'user',
      }),
    ).toBe('settlingTools.running');
  });

  it('a later restart checks again a call a person was asked about', () => {
    const run = crashedWhileRunning(['c1']);
    run.send(marked('c1'));
    expect(run.send(recovered('settlingTools.running', ['c1']))).toBe('awaitingPermission');
    // A newer process whose tool can tell: the call is marked again, with its check.
    expect(run.send(marked('c1', 'reconcile'))).toBe('settlingTools.running');
    expect(run.send(recovered('awaitingPermission', ['c1']))).toBe('settlingTools.reconciling');
    expect(run.started.at(-1)).toMatchObject({ input: { phase: 'reconcile', recovery: 2 } });
    run.send(reconciled('c1', 'done'));
    expect(run.send(settled('c1'))).toBe('projecting');
  });

  it('a person cannot decide a call while its tool is asked', () => {
    const run = crashedWhileRunning(['c1']);
    run.send(marked('c1', 'reconcile'));
    run.send(recovered('settlingTools.running', ['c1']));
    expect(
      run.can({
        type: 'tool.permission.decided',
        callId: 'c1',
        decision: 'report-unknown',
        inputHash: 'hash-c1',
        by: 'user',
      }),
    ).toBe(false);
  });

  it("takes a person's answer for a call no tool can check while the others are checked", () => {
    const run = crashedWhileRunning(['c1', 'c2']);
    run.send(marked('c1', 'reconcile'));
    run.send(marked('c2'));
    run.send(recovered('settlingTools.running', ['c1', 'c2']));
    expect(
      run.send({
        type: 'tool.permission.decided',
        callId: 'c2',
        decision: 'report-unknown',
        inputHash: 'hash-c2',
        by: 'user',
      }),
    ).toBe('settlingTools.reconciling');
    expect(run.send(reconciled('c1', 'not-done'))).toBe('settlingTools.running');
  });

  it('a stop while checking: the answer is refused and the call settles unknown', () => {
    const run = crashedWhileRunning(['c1']);
    run.send(marked('c1', 'reconcile'));
    run.send(recovered('settlingTools.running', ['c1']));
    expect(run.send({ type: 'run.stop.requested', reason: 'user' })).toBe('settlingTools.stopping');
    expect(run.can(reconciled('c1', 'not-done'))).toBe(false);
    expect(run.started.at(-1)).toMatchObject({
      input: { phase: 'abandon', callId: 'c1', outcome: 'unknown' },
    });
  });

  it('a crash while checking: the next recovery checks again', () => {
    const run = crashedWhileRunning(['c1']);
    run.send(marked('c1', 'reconcile'));
    run.send(recovered('settlingTools.running', ['c1']));
    expect(run.send(marked('c1', 'reconcile'))).toBe('settlingTools.reconciling');
    expect(run.send(recovered('settlingTools.reconciling', ['c1']))).toBe(
      'settlingTools.reconciling',
    );
    expect(run.started.at(-1)).toMatchObject({ input: { phase: 'reconcile', recovery: 2 } });
  });
});
