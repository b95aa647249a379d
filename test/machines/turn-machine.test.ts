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

describe('turnMachine', () => {
  it('runs a text-only turn: projecting → requesting → terminal (completed, end_turn)', () => {
    const run = drive();
    expect(run.state()).toBe('projecting');
    expect(run.started).toEqual([
      {
        src: 'prepareStep',
        input: { sessionId: 'session_1', runId: 'run_1', retry: undefined, mayCompact: true },
      },
    ]);
    expect(run.send(stepStarted())).toBe('requesting.streaming');
    expect(run.started[1]).toEqual({
      src: 'providerStep',
      input: { sessionId: 'session_1', runId: 'run_1', stepId: 'step_1', attempt: 1 },
    });
    expect(run.send(stepCompleted())).toBe('terminal');
    expect(run.actor.getSnapshot().status).toBe('done');
    expect(run.actor.getSnapshot().output).toEqual({ status: 'completed', reason: 'end_turn' });
  });

  it.each([
    ['stop', 'end_turn', { status: 'completed', reason: 'end_turn' }],
    ['tool-calls', 'tool_use', { status: 'completed', reason: 'end_turn' }],
    ['length', 'max_tokens', { status: 'failed', reason: 'max_output_tokens' }],
    ['content-filter', 'refusal', { status: 'failed', reason: 'content_filter' }],
    [
      'other',
      undefined,
      {
        status: 'failed',
        reason: 'provider_error',
        error: {
          message:
            'The model\'s last step finished with reason "other", which does not say the answer is complete.',
        },
      },
    ],
    [
      'unknown',
      'pause',
      {
        status: 'failed',
        reason: 'provider_error',
        error: {
          message:
            'The model\'s last step finished with reason "unknown" (provider reason "pause"), which does not say the answer is complete.',
        },
      },
    ],
    [
      'interrupted',
      undefined,
      {
        status: 'failed',
        reason: 'provider_error',
        error: {
          message:
            'The model\'s last step finished with reason "interrupted", which does not say the answer is complete.',
        },
      },
    ],
  ] as const)(
    'ends a final step that finished %s (raw %s) as %o: only a clean finish completes',
    (unified, raw, outcome) => {
      const run = drive();
      run.send(stepStarted());
      const completed = { ...stepCompleted(), finishReason: { unified, raw } } as ProposedFact;
      expect(run.send(completed)).toBe('terminal');
      expect(run.actor.getSnapshot().output).toEqual(outcome);
    },
  );

  it('settles a two-tool step where one tool fails, then projects the next request', () => {
    const run = drive();
    run.send(stepStarted());
    expect(run.send(stepCompleted([call('c1'), call('c2')]))).toBe('settlingTools.deciding');
    // The decisions come in the write of step.completed: no decider is started for them.
    expect(run.started.filter((actor) => actor.src === 'settleTool')).toEqual([]);
    expect(run.send(allow('c1'))).toBe('settlingTools.deciding');
    expect(run.send(allow('c2'))).toBe('settlingTools.running');
    const runners = run.started.filter(
      (actor) => (actor.input as { phase?: string }).phase === 'run',
    );
    expect(runners.map((actor) => (actor.input as { callId: string }).callId)).toEqual([
      'c1',
      'c2',
    ]);
    expect(run.send(started('c1'))).toBe('settlingTools.running');
    expect(run.send(started('c2'))).toBe('settlingTools.running');
    expect(run.send(settled('c1'))).toBe('settlingTools.running');
    expect(run.send(settled('c2', 'error'))).toBe('projecting');
    expect(run.actor.getSnapshot().context.completedSteps).toBe(1);
  });

  it('refuses tool.started without an allow bound to the same input hash (I5)', () => {
    const run = drive();
    run.send(stepStarted());
    run.send(stepCompleted([call('c1')]));
    expect(run.can(started('c1'))).toBe(false);
    run.send(allow('c1'));
    expect(run.can({ ...started('c1'), inputHash: 'other' } as ProposedFact)).toBe(false);
    expect(run.can(started('c1'))).toBe(true);
  });

  it('parks on a permission ask until the person decides: allow, then deny in a later step', () => {
    const run = drive();
    run.send(stepStarted());
    run.send(stepCompleted([call('c1')]));
    expect(
      run.send({
        type: 'tool.permission.requested',
        callId: 'c1',
        name: 'echo',
        input: {},
        inputHash: 'hash-c1',
      }),
    ).toBe('awaitingPermission');
    expect(run.can(started('c1'))).toBe(false);
    expect(
      run.can({
        type: 'tool.permission.decided',
        callId: 'c1',
        decision: 'report-unknown',
        inputHash: 'hash-c1',
        by: 'user',
      }),
    ).toBe(false);
    expect(run.send(allow('c1', 'user'))).toBe('settlingTools.running');
    run.send(started('c1'));
    expect(run.send(settled('c1'))).toBe('projecting');

    run.send(stepStarted('step_2'));
    run.send(stepCompleted([call('c2')], 'step_2'));
    run.send({
      type: 'tool.permission.requested',
      callId: 'c2',
      name: 'echo',
      input: {},
      inputHash: 'hash-c2',
    });
    expect(
      run.send({
        type: 'tool.permission.decided',
        callId: 'c2',
        decision: 'deny',
        inputHash: 'hash-c2',
        by: 'user',
        reason: 'no',
      }),
    ).toBe('settlingTools.running');
    const runner = run.started.at(-1);
    expect(runner).toEqual({
      src: 'settleTool',
      input: {
        phase: 'run',
        sessionId: 'session_1',
        runId: 'run_1',
        stepId: 'step_2',
        callId: 'c2',
        decision: { decision: 'deny', inputHash: 'hash-c2', by: 'user', reason: 'no' },
        execution: 1,
      },
    });
    expect(run.send({ ...settled('c2'), outcome: 'denied' } as ProposedFact)).toBe('projecting');
  });

  it('keeps steering that arrives during a tool and answers steering that arrives during a final step', () => {
    const run = drive();
    run.send(stepStarted());
    run.send(stepCompleted([call('c1')]));
    run.send(allow('c1'));
    run.send(started('c1'));
    expect(run.send({ type: 'steering.received', messageId: 'm1', text: 'also check b' })).toBe(
      'settlingTools.running',
    );
    expect(run.send(settled('c1'))).toBe('projecting');
    run.send({ ...stepStarted('step_2'), projectedThroughSeq: 8 } as ProposedFact);
    expect(run.send({ type: 'steering.received', messageId: 'm2', text: 'and c' })).toBe(
      'requesting.streaming',
    );
    // The model ended its turn, but a steering message arrived after the request was projected.
    expect(run.send(stepCompleted([], 'step_2'))).toBe('projecting');
    run.send({ ...stepStarted('step_3'), projectedThroughSeq: 11 } as ProposedFact);
    expect(run.send(stepCompleted([], 'step_3'))).toBe('terminal');
  });

  it('retries a 429 after the backoff: backingOff waits for retry.due of the next attempt', () => {
    const run = drive();
    run.send(stepStarted());
    expect(run.send(failed('rate_limit', { retryAfterMs: 2000 }))).toBe('requesting.backingOff');
    expect(run.started.at(-1)).toEqual({
      src: 'retryTimer',
      input: { runId: 'run_1', stepId: 'step_1', attempt: 1, retryAfterMs: 2000 },
    });
    expect(run.can({ type: 'retry.due', stepId: 'step_1', attempt: 3 })).toBe(false);
    expect(run.send({ type: 'retry.due', stepId: 'step_1', attempt: 2 })).toBe('projecting');
    expect(run.started.at(-1)).toEqual({
      src: 'prepareStep',
      input: {
        sessionId: 'session_1',
        runId: 'run_1',
        retry: { stepId: 'step_1', attempt: 2 },
        mayCompact: true,
      },
    });
    expect(run.send(stepStarted('step_1', 2))).toBe('requesting.streaming');
  });

  it('stops retrying at maxAttempts and fails with retries_exhausted', () => {
    const run = drive({ maxAttempts: 2 });
    run.send(stepStarted());
    run.send(failed('rate_limit'));
    run.send({ type: 'retry.due', stepId: 'step_1', attempt: 2 });
    run.send(stepStarted('step_1', 2));
    expect(run.send(failed('rate_limit'))).toBe('terminal');
    expect(run.actor.getSnapshot().output).toMatchObject({
      status: 'failed',
      reason: 'retries_exhausted',
    });
  });

  it('never retries a failure that came after output (I9)', () => {
    const run = drive();
    run.send(stepStarted());
    expect(run.send(failed('rate_limit', { observedOutput: true }))).toBe('terminal');
    expect(run.actor.getSnapshot().output).toMatchObject({
      status: 'failed',
      reason: 'provider_error',
    });
  });

  it('compacts once on context_overflow and fails on the second overflow', () => {
    const run = drive();
    run.send(stepStarted());
    expect(run.send(failed('context_overflow'))).toBe('compacting');
    expect(run.started.at(-1)).toEqual({
      src: 'summarize',
      input: { sessionId: 'session_1', runId: 'run_1', reason: 'overflow' },
    });
    expect(
      run.send({
        type: 'compaction.completed',
        summary: 's',
        throughSeq: 3,
        tokensBefore: 100,
        tokensAfter: 10,
      }),
    ).toBe('projecting');
    expect(run.actor.getSnapshot().context.compactedSinceStep).toBe(true);
    expect(run.can({ type: 'compaction.started', reason: 'budget' })).toBe(false);
    expect(run.send(stepStarted('step_2'))).toBe('requesting.streaming');
    expect(run.send({ ...failed('context_overflow'), stepId: 'step_2' } as ProposedFact)).toBe(
      'terminal',
    );
    expect(run.actor.getSnapshot().output).toMatchObject({
      status: 'failed',
      reason: 'context_overflow',
    });
  });

  it('compacts on budget from projecting', () => {
    const run = drive();
    expect(
      run.send({
        type: 'compaction.started',
        reason: 'budget',
        estimatedTokens: 900,
        budgetTokens: 800,
      }),
    ).toBe('compacting');
    expect(run.started.at(-1)).toEqual({
      src: 'summarize',
      input: { sessionId: 'session_1', runId: 'run_1', reason: 'budget' },
    });
  });

  it('counts each summarizing call a recovery sends again, and past the budget ends instead of sending it', () => {
    const run = drive({ maxRunInputTokens: 2_000 });
    const compaction = { type: 'compaction.started', reason: 'budget' } as const;
    run.send({ ...compaction, estimatedTokens: 900, budgetTokens: 800 });
    const recovered: ProposedFact = {
      type: 'run.recovered',
      interrupted: 'compacting',
      indeterminate: [],
    };
    // 900 spent: the call is sent again (1 800 spent)…
    expect(run.send(recovered)).toBe('compacting');
    expect(run.started.filter((actor) => actor.src === 'summarize')).toHaveLength(2);
    expect(run.actor.getSnapshot().context.tokensSpent.input).toBe(1_800);
    // …and again (2 700)…
    expect(run.send(recovered)).toBe('compacting');
    // …but not a fourth time: the budget is spent.
    expect(run.send(recovered)).toBe('terminal');
    expect(run.started.filter((actor) => actor.src === 'summarize')).toHaveLength(3);
    expect(run.actor.getSnapshot().output).toEqual({
      status: 'failed',
      reason: 'budget_exhausted',
    });
  });

  it("replaces the last summarizing call's estimate with its measured prompt when it completes", () => {
    const run = drive({ maxRunInputTokens: 100_000 });
    run.send({
      type: 'compaction.started',
      reason: 'budget',
      estimatedTokens: 900,
      budgetTokens: 800,
    });
    run.send({ type: 'run.recovered', interrupted: 'compacting', indeterminate: [] });
    run.send({
      type: 'compaction.completed',
      summary: 's',
      throughSeq: 1,
      tokensBefore: 700,
      tokensAfter: 50,
    });
    // The cut call's estimate (900) and the completed one's measured prompt (700) and summary.
    expect(run.actor.getSnapshot().context.tokensSpent).toEqual({ input: 1_600, output: 50 });
  });

  it('lets the last allowed step settle its calls, then ends with step_limit and no further request', () => {
    const run = drive({ maxSteps: 2 });
    for (const stepId of ['step_1', 'step_2']) {
      run.send(stepStarted(stepId));
      run.send(stepCompleted([call('c1')], stepId));
      run.send(allow('c1'));
      run.send(started('c1'));
      run.send(settled('c1'));
    }
    expect(run.state()).toBe('terminal');
    expect(run.actor.getSnapshot().output).toEqual({ status: 'failed', reason: 'step_limit' });
    expect(run.started.filter((actor) => actor.src === 'prepareStep')).toHaveLength(2);
  });
});
