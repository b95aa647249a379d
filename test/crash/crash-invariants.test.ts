import { describe, expect, it } from 'vitest';
import type { Fact } from '../../events/facts.ts';
import type { ModelMessage } from '../../events/messages.ts';
import { draft } from '../events/log-builder.ts';
import type { Execution } from './crash-harness.ts';
import { crashViolations, finalViolations, historyViolations } from './crash-invariants.ts';
import { toolLog, toolRun } from './tool-run.ts';

/** The campaign trusts these checks to see a violation: each one is shown one. */

const executed = (...callIds: string[]): Execution[] =>
  callIds.map((callId) => ({ callId, tool: 'tool', pid: 7 }));

const pairedHistory: ModelMessage[] = [
  { role: 'user', content: 'go' },
  {
    role: 'assistant',
    content: [
      { type: 'tool-call', callId: 'c1', name: 'tool', input: {} },
      { type: 'tool-call', callId: 'c2', name: 'tool', input: {} },
    ],
  },
  {
    role: 'tool',
    content: [
      { type: 'tool-result', callId: 'c1', name: 'tool', text: 'one', isError: false },
      { type: 'tool-result', callId: 'c2', name: 'tool', text: 'two', isError: false },
    ],
  },
  { role: 'assistant', content: [{ type: 'text', text: 'Done.' }] },
];

describe('crashViolations', () => {
  it('finds nothing in a whole run, nor in any prefix of it', () => {
    const facts = toolRun();
    expect(finalViolations(facts, executed('c1', 'c2'), 2, pairedHistory)).toEqual([]);
    for (let length = 1; length <= facts.length; length += 1) {
      const executions = executed('c1', 'c2').filter((_, index) => length >= 6 + index);
      const requests = length >= 10 ? 2 : length >= 2 ? 1 : 0;
      expect(crashViolations(facts.slice(0, length), executions, requests)).toEqual([]);
    }
  });

  it('names a call executed twice', () => {
    expect(crashViolations(toolRun(7), executed('c1', 'c2', 'c1'), 1)).toEqual([
      'I5/I8: c1 executed 2 times',
    ]);
  });

  it('names an execution without its tool.started, and one of a call that provably never ran', () => {
    expect(crashViolations(toolRun(6), executed('c1', 'c2'), 1)).toEqual([
      'I2: c2 executed (pid 7) without a durable tool.started',
      'I2: c2 has no tool.started but was executed',
    ]);
  });

  it('names a provider request sent without its own step.started', () => {
    expect(crashViolations(toolRun(3), executed(), 2)).toEqual([
      'I2/I8: 2 provider requests but 1 step.started facts',
    ]);
  });

  it('names a started call that recovery neither settled nor marked indeterminate', () => {
    const log = toolLog(7);
    log.add(draft.indeterminate('c1'), 'settlingTools.running');
    log.add(
      { type: 'run.recovered', interrupted: 'settlingTools.running', indeterminate: ['c1'] },
      'awaitingPermission',
    );
    expect(crashViolations(log.facts, executed('c1', 'c2'), 1)).toEqual([
      'I8: c2 started at seq 7 has neither tool.settled nor tool.indeterminate before run.recovered at seq 9',
    ]);
  });

  it('reports the log damage findDamage sees: a seq gap, a second run.ended', () => {
    const facts = toolRun();
    const gap = facts.filter((fact) => fact.seq !== 4);
    expect(crashViolations(gap, executed('c1', 'c2'), 2)).toEqual([
      'damaged log: session session_1: seq 4 missing before seq 5 (tool.permission.decided)',
    ]);
    const last = facts.at(-1) as Fact;
    const twice = [...facts, { ...last, id: 'again', seq: last.seq + 1 }];
    expect(crashViolations(twice, executed('c1', 'c2'), 2)).toEqual([
      'damaged log: run run_1 has 2 run.ended facts (seq 12, 13); I7 allows one',
      'I7: 2 run.ended facts',
    ]);
  });
});

describe('finalViolations', () => {
  it('names an unended run, a start never settled, and a success that never executed', () => {
    expect(finalViolations(toolRun(8), executed(), 1, pairedHistory)).toEqual([
      'I7: 0 run.ended facts, expected 1',
      'I6: c2 started and never settled',
      'c1 settled success after 0 executions',
    ]);
  });

  it('names an indeterminate call that did not settle unknown, and a missing history', () => {
    const log = toolLog(7);
    log.add(draft.indeterminate('c1'), 'settlingTools.running');
    log.add(draft.indeterminate('c2'), 'settlingTools.running');
    log.add(draft.settled('c1', 'late', 'success'), 'settlingTools.running');
    log.add(draft.settled('c2', 'unknown', 'unknown'), 'projecting');
    log.add(draft.ended(), 'terminal');
    expect(finalViolations(log.facts, executed('c1', 'c2'), 1, undefined)).toEqual([
      'I8: indeterminate c1 settled success, expected unknown',
      'the final child printed no history',
    ]);
  });
});

describe('historyViolations', () => {
  it('names a call without a result, a result twice, and a result without a call', () => {
    const [user, calls] = pairedHistory;
    const broken: ModelMessage[] = [
      user as ModelMessage,
      calls as ModelMessage,
      {
        role: 'tool',
        content: [
          { type: 'tool-result', callId: 'c1', name: 'tool', text: 'one', isError: false },
          { type: 'tool-result', callId: 'c1', name: 'tool', text: 'again', isError: false },
          { type: 'tool-result', callId: 'c9', name: 'tool', text: 'who', isError: false },
        ],
      },
    ];
    expect(historyViolations(broken)).toEqual([
      'I6: history pairs call c1 with 2 results',
      'I6: history pairs call c2 with 0 results',
      'I6: history has a result for unknown call c9',
    ]);
  });
});
