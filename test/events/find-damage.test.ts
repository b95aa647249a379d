import { describe, expect, it } from 'vitest';
import type { Fact } from '../../events/facts.ts';
import { findDamage } from '../../events/find-damage.ts';
import { planRecovery } from '../../events/plan-recovery.ts';
import { draft, logBuilder } from './log-builder.ts';

/** A finished run with one tool step: seq 1–7. */
function toolRun() {
  const log = logBuilder();
  log.startRun('go'); // 1
  log.add(draft.stepStarted('s1')); // 2
  log.add(draft.stepCompleted('s1', { calls: [draft.call('c1')] })); // 3
  log.add(draft.started('c1')); // 4
  log.add(draft.settled('c1', 'ok')); // 5
  log.add(draft.stepStarted('s2')); // 6
  log.add(draft.stepCompleted('s2', { content: [{ type: 'text', text: 'done' }] })); // 7
  return log;
}

const renumber = (facts: readonly Fact[], seqs: number[]): Fact[] =>
  facts.map((fact, index) => ({ ...fact, seq: seqs[index] ?? fact.seq }));

describe('planRecovery damage findings', () => {
  it('reports two run.ended for a run, and not the second one as a fact after the first', () => {
    const log = toolRun();
    log.add(draft.ended()); // 8
    log.add(draft.ended('failed', 'provider_error')); // 9
    expect(planRecovery(log.facts)).toStrictEqual({
      runs: [],
      damage: [
        {
          kind: 'duplicate-run-ended',
          sessionId: 'session_1',
          runId: 'run_1',
          stepId: undefined,
          callId: undefined,
          seqs: [8, 9],
          message: 'run run_1 has 2 run.ended facts (seq 8, 9); I7 allows one',
        },
      ],
    });
  });

  it('reports every fact appended after run.ended', () => {
    const log = toolRun();
    log.add(draft.ended()); // 8
    log.add(draft.steering('late')); // 9
    log.add(draft.settled('c1', 'again')); // 10
    const damage = findDamage(log.facts);
    expect(damage.map((entry) => [entry.kind, entry.seqs, entry.callId])).toStrictEqual([
      ['fact-after-run-ended', [9], undefined],
      ['fact-after-run-ended', [10], 'c1'],
      ['tool-fact-without-call', [10], 'c1'],
    ]);
    expect(damage[0]?.message).toBe(
      'run run_1: steering.received at seq 9 follows its run.ended at seq 8',
    );
  });

  it('reports a tool.settled and a tool.started whose call is not in the step completed last', () => {
    const log = logBuilder();
    log.startRun('go'); // 1
    log.add(draft.settled('c0', 'before any step')); // 2
    log.add(draft.stepStarted('s1')); // 3
    log.add(draft.stepCompleted('s1', { calls: [draft.call('c1')] })); // 4
    log.add(draft.started('c2')); // 5
    log.add(draft.settled('c1', 'ok')); // 6
    const damage = findDamage(log.facts);
    expect(damage).toStrictEqual([
      {
        kind: 'tool-fact-without-call',
        sessionId: 'session_1',
        runId: 'run_1',
        stepId: undefined,
        callId: 'c0',
        seqs: [2],
        message:
          'run run_1: tool.settled at seq 2 names call c0, which is not a call of the step completed last before it',
      },
      {
        kind: 'tool-fact-without-call',
        sessionId: 'session_1',
        runId: 'run_1',
        stepId: undefined,
        callId: 'c2',
        seqs: [5],
        message:
          'run run_1: tool.started at seq 5 names call c2, which is not a call of the step completed last before it',
      },
    ]);
  });

  it('reports two tool.settled and two tool.started for one call', () => {
    const log = logBuilder();
    log.startRun('go'); // 1
    log.add(draft.stepStarted('s1')); // 2
    log.add(draft.stepCompleted('s1', { calls: [draft.call('c1')] })); // 3
    log.add(draft.started('c1')); // 4
    log.add(draft.settled('c1', 'ok')); // 5
    log.add(draft.started('c1')); // 6
    log.add(draft.settled('c1', 'twice')); // 7
    const damage = findDamage(log.facts);
    expect(
      damage.map((entry) => [entry.kind, entry.stepId, entry.callId, entry.seqs]),
    ).toStrictEqual([
      ['duplicate-tool-started', 's1', 'c1', [4, 6]],
      ['duplicate-tool-settled', 's1', 'c1', [5, 7]],
    ]);
    expect(damage.map((entry) => entry.message)).toStrictEqual([
      'run run_1 step s1 call c1 was started 2 times (seq 4, 6); I5 allows one',
      'run run_1 step s1 call c1 has 2 tool.settled facts (seq 5, 7); I6 allows one',
    ]);
  });

  it('reports a seq gap, a repeated seq and a session that does not start at 1', () => {
    const facts = toolRun().facts;
    expect(findDamage(renumber(facts, [1, 2, 3, 5, 6, 7, 8]))).toStrictEqual([
      {
        kind: 'seq-gap',
        sessionId: 'session_1',
        runId: undefined,
        stepId: undefined,
        callId: undefined,
        seqs: [3, 5],
        message: 'session session_1: seq 4 missing before seq 5 (tool.started)',
      },
    ]);
    expect(
      findDamage(renumber(facts, [1, 2, 3, 4, 4, 5, 6])).map((entry) => [entry.kind, entry.seqs]),
    ).toStrictEqual([['seq-disorder', [4, 4]]]);
    expect(
      findDamage(renumber(facts, [1, 2, 4, 3, 5, 6, 7])).map((entry) => entry.message),
    ).toStrictEqual([
      'session session_1: seq 3 missing before seq 4 (step.completed)',
      'session session_1: seq 3 (tool.started) comes after seq 4',
    ]);
    expect(
      findDamage(renumber(facts, [3, 4, 5, 6, 7, 8, 9])).map((entry) => entry.message),
    ).toStrictEqual(['session session_1: seq 1–2 missing before seq 3 (run.started)']);
  });

  it('checks seq per session when facts of two sessions are mixed', () => {
    const first = toolRun().facts;
    const second = logBuilder({ sessionId: 'session_2', idPrefix: 'other' });
    second.startRun('other');
    second.add(draft.stepStarted('t1'));
    const mixed = [first[0], second.facts[0], ...first.slice(1), second.facts[1]] as Fact[];
    expect(findDamage(mixed)).toStrictEqual([]);
  });

  it('reports duplicate fact ids, step completions, call ids and run.started', () => {
    const log = logBuilder();
    log.startRun('go'); // 1
    log.add({ ...draft.runStarted('go again') }); // 2
    log.add(draft.stepStarted('s1')); // 3
    log.add(draft.stepCompleted('s1', { calls: [draft.call('c1'), draft.call('c1')] })); // 4
    log.add({ ...draft.stepCompleted('s1'), id: 'fact_3' }); // 5
    expect(
      findDamage(log.facts).map((entry) => [
        entry.kind,
        entry.runId,
        entry.stepId,
        entry.seqs,
        entry.message,
      ]),
    ).toStrictEqual([
      [
        'duplicate-run-started',
        'run_1',
        undefined,
        [1, 2],
        'run run_1 has 2 run.started facts (seq 1, 2)',
      ],
      [
        'duplicate-fact-id',
        undefined,
        undefined,
        [3, 5],
        'session session_1: fact id fact_3 is used by 2 facts (seq 3, 5)',
      ],
      [
        'duplicate-step-completed',
        'run_1',
        's1',
        [4, 5],
        'run run_1 step s1 has 2 step.completed facts (seq 4, 5)',
      ],
      ['duplicate-call-id', 'run_1', 's1', [4], 'run run_1 step s1 lists call c1 more than once'],
    ]);
  });

  it('reports a run whose first fact is not run.started', () => {
    const log = logBuilder();
    log.add(draft.stepStarted('s1'));
    expect(
      findDamage(log.facts).map((entry) => [entry.kind, entry.runId, entry.message]),
    ).toStrictEqual([
      [
        'missing-run-started',
        'run_0',
        'run run_0 begins with step.started at seq 1, not run.started',
      ],
    ]);
    expect(planRecovery(log.facts).runs).toStrictEqual([]);
  });

  it('lists an unfinished run’s damage in its plan and a finished run’s only in the plan’s damage', () => {
    const log = toolRun();
    log.add(draft.settled('c9', 'stray')); // 8
    log.add(draft.ended()); // 9
    log.startRun('next'); // 10
    log.add(draft.settled('c8', 'stray')); // 11
    const plan = planRecovery(log.facts);
    expect(plan.damage.map((entry) => [entry.runId, entry.seqs])).toStrictEqual([
      ['run_1', [8]],
      ['run_2', [11]],
    ]);
    expect(
      plan.runs.map((run) => [run.runId, run.damage.map((entry) => entry.seqs)]),
    ).toStrictEqual([['run_2', [[11]]]]);
  });
});
