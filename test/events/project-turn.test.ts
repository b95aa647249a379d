import { describe, expect, it } from 'vitest';
import { projectTurn } from '../../events/project-turn.ts';
import { allowedByPolicy, callView, completedStep, usage } from './expected-views.ts';
import { draft, logBuilder } from './log-builder.ts';
import { loadSampleLog } from './sample-logs.ts';

const anthropic = { provider: 'anthropic.messages', modelId: 'claude-sonnet-4-5' } as const;
const teamPost = {
  url: 'https://chat.example.com/hooks/team',
  body: { text: 'turnlog 0.1.0 is out' },
};
const feedPost = { url: 'https://feeds.example.com/changelog', body: { version: '0.1.0' } };

describe('projectTurn on the unfinished and interrupted sample logs', () => {
  it('projects interrupted-tool as running, with one call started and one not', () => {
    expect(projectTurn(loadSampleLog('interrupted-tool'))).toEqual({
      sessionId: 'ses_mmatdz867d9cf81f4584',
      runs: [
        {
          runId: 'run_mmatdz866fddbc5318ee',
          turnId: 'turn_mmatdz8649ca4e61686e',
          input: 'Post the release note to the team channel and to the changelog feed.',
          status: 'running',
          state: 'settlingTools.running',
          reason: undefined,
          error: undefined,
          startedAt: '2026-03-03T16:20:44.310Z',
          endedAt: undefined,
          steps: [
            completedStep({
              stepId: 'step_mmatdz86e04cfba2ecf1',
              ...anthropic,
              finishReason: { unified: 'tool-calls', raw: 'tool_use' },
              usage: usage(1530, 121, undefined, 0),
              text: 'Posting to both.',
              toolCalls: [
                callView({
                  callId: 'toolu_01CHIKE6JFWYIkTUg274xhCE',
                  name: 'httpPost',
                  input: teamPost,
                  permission: allowedByPolicy,
                  started: true,
                }),
                callView({
                  callId: 'toolu_01D0wbOj8VR4XqFK9uQeNlCZ',
                  name: 'httpPost',
                  input: feedPost,
                  permission: allowedByPolicy,
                }),
              ],
            }),
          ],
          text: 'Posting to both.',
          pending: [],
          usage: usage(1530, 121, undefined, 0),
        },
      ],
      pending: [],
      usage: usage(1530, 121, undefined, 0),
    });
  });

  it('projects recovered-tool while parked as awaiting an indeterminate decision', () => {
    const facts = loadSampleLog('recovered-tool').filter((fact) => fact.seq <= 8);
    const view = projectTurn(facts);
    const pending = [
      {
        kind: 'indeterminate',
        callId: 'toolu_01G0Emxmyu3VCvncpMTqmLmc',
        name: 'httpPost',
        input: teamPost,
        inputHash: 'sha256:2afe925152cb82427c9a9161ec77eaf6',
      },
    ];
    expect(view.runs[0]?.status).toBe('awaiting');
    expect(view.runs[0]?.state).toBe('awaitingPermission');
    expect(view.runs[0]?.pending).toEqual(pending);
    expect(view.pending).toEqual(pending);
    expect(view.runs[0]?.steps[0]?.toolCalls[0]).toEqual(
      callView({
        callId: 'toolu_01G0Emxmyu3VCvncpMTqmLmc',
        name: 'httpPost',
        input: teamPost,
        permission: allowedByPolicy,
        started: true,
        indeterminate: true,
      }),
    );
  });

  it('projects recovered-tool, once finished, with the resolution and the unknown outcome', () => {
    const view = projectTurn(loadSampleLog('recovered-tool'));
    expect(view.runs[0]?.status).toBe('completed');
    expect(view.pending).toEqual([]);
    expect(view.runs[0]?.steps[0]?.toolCalls).toEqual([
      callView({
        callId: 'toolu_01G0Emxmyu3VCvncpMTqmLmc',
        name: 'httpPost',
        input: teamPost,
        permission: {
          decision: 'report-unknown',
          by: 'user',
          reason: 'Check the channel before posting again.',
        },
        started: true,
        outcome: 'unknown',
        result:
          'The outcome of this call is unknown: the process stopped while it was running. Check whether it took effect before you retry it.',
      }),
      callView({
        callId: 'toolu_01JOdkjiHKAM2TwlXQqeSeCI',
        name: 'httpPost',
        input: feedPost,
        permission: allowedByPolicy,
        started: true,
        outcome: 'success',
        result: 'HTTP 200 OK',
      }),
    ]);
    expect(view.usage).toEqual(usage(3320, 185, undefined, 1408));
  });

  it('projects permission while asking as awaiting, with the pending call and the ask’s reason', () => {
    const view = projectTurn(loadSampleLog('permission').filter((fact) => fact.seq <= 4));
    expect(view.runs[0]?.status).toBe('awaiting');
    expect(view.pending).toEqual([
      {
        kind: 'permission',
        callId: 'toolu_011yZvyzRQVznWwMbahyA70M',
        name: 'runCommand',
        input: { command: 'rm -rf dist' },
        inputHash: 'sha256:8e6af7e16e017b3a77f2e1ec3a3f148a',
      },
    ]);
    expect(view.runs[0]?.steps[0]?.toolCalls[0]?.permission).toEqual({
      decision: 'pending',
      by: undefined,
      reason: 'runCommand asks before it runs a command',
    });
  });

  it('projects retry-429 as one step of two attempts, retrying while backing off', () => {
    const facts = loadSampleLog('retry-429');
    const rateLimit = {
      kind: 'rate_limit' as const,
      retryable: true,
      message:
        'Rate limit reached for gpt-5-mini on tokens per min (TPM): Limit 200000, Used 199310, Requested 1180. Please try again in 2s.',
      status: 429,
      retryAfterMs: 2000,
    };
    const stepAt = (seq: number) =>
      projectTurn(facts.filter((fact) => fact.seq <= seq)).runs[0]?.steps[0];
    expect([2, 3, 4, 5].map((seq) => [stepAt(seq)?.status, stepAt(seq)?.attempts])).toEqual([
      ['requesting', 1],
      ['retrying', 1],
      ['retrying', 1],
      ['requesting', 2],
    ]);
    expect(projectTurn(facts).runs[0]?.steps).toEqual([
      completedStep({
        stepId: 'step_mmbzil0q6148dacb361e',
        provider: 'openai.responses',
        modelId: 'gpt-5-mini',
        attempts: 2,
        finishReason: { unified: 'stop', raw: undefined },
        usage: usage(688, 23, 0, 0),
        text: 'Durable LLM agent turns: an XState machine over an append-only event log.',
        error: rateLimit,
      }),
    ]);
  });

  it('projects stop as aborted with the cancelled call', () => {
    const view = projectTurn(loadSampleLog('stop'));
    expect(view.runs.map((run) => [run.status, run.reason, run.state, run.endedAt])).toEqual([
      ['aborted', 'stop_requested', 'terminal', '2026-03-04T15:41:41.684Z'],
    ]);
    expect(view.runs[0]?.steps[0]?.toolCalls).toEqual([
      callView({
        callId: 'toolu_01eEKWjBStxELyOkO8eSae04',
        name: 'reindex',
        input: { scope: 'all' },
        permission: allowedByPolicy,
        started: true,
        outcome: 'cancelled',
        result: 'The call was cancelled because the run was stopped (user pressed stop).',
      }),
    ]);
    expect(view.runs[0]?.text).toBe('Starting the reindex; it can take a few minutes.');
  });
});

describe('projectTurn on crafted logs', () => {
  it('projects an empty log to no runs and all-unknown usage', () => {
    expect(projectTurn([])).toEqual({
      sessionId: undefined,
      runs: [],
      pending: [],
      usage: usage(undefined, undefined, undefined, undefined),
    });
  });

  it('sums only the numbers steps reported', () => {
    const log = logBuilder();
    log.startRun('go');
    log.add(draft.stepStarted('s1'));
    log.add(draft.stepCompleted('s1', { calls: [draft.call('c1')], usage: { inputTokens: 10 } }));
    log.add(draft.settled('c1', 'ok'));
    log.add(draft.stepStarted('s2'));
    log.add(draft.stepCompleted('s2', { usage: { inputTokens: 5, outputTokens: 0 } }));
    expect(projectTurn(log.facts).runs[0]?.usage).toEqual(usage(15, 0, undefined, undefined));
  });

  it('marks a step abandoned when the run ended while it was requesting, and failed when it failed', () => {
    const log = logBuilder();
    log.startRun('one');
    log.add(draft.stepStarted('s1'));
    log.add({ type: 'run.stop.requested', reason: 'stop' });
    log.add(draft.ended('aborted', 'stop_requested'));
    log.startRun('two');
    log.add(draft.stepStarted('s2'));
    log.add(draft.stepFailed('s2', 'context_overflow'));
    log.add(draft.ended('failed', 'provider_error'));
    const view = projectTurn(log.facts);
    expect(view.runs.map((run) => [run.status, run.steps[0]?.status, run.text])).toEqual([
      ['aborted', 'abandoned', ''],
      ['failed', 'failed', ''],
    ]);
  });

  it('marks an unfinished step abandoned once a later step started, and the later one requesting', () => {
    const log = logBuilder();
    log.startRun('go');
    log.add(draft.stepStarted('s1'));
    log.add(draft.stepStarted('s2'));
    expect(projectTurn(log.facts).runs[0]?.steps.map((step) => [step.stepId, step.status])).toEqual(
      [
        ['s1', 'abandoned'],
        ['s2', 'requesting'],
      ],
    );
  });

  it('collects pending decisions of every unfinished run at session level, in call order', () => {
    const log = logBuilder();
    log.startRun('go');
    log.add(draft.stepStarted('s1'));
    log.add(
      draft.stepCompleted('s1', { calls: [draft.call('c1'), draft.call('c2'), draft.call('c3')] }),
    );
    log.add(draft.asked('c2', { b: 2 }));
    log.add(draft.asked('c1', { a: 1 }));
    log.add(draft.allowed('c3'));
    const view = projectTurn(log.facts);
    expect(
      view.pending.map((decision) => [decision.kind, decision.callId, decision.input]),
    ).toEqual([
      ['permission', 'c1', { a: 1 }],
      ['permission', 'c2', { b: 2 }],
    ]);
    log.add({
      type: 'tool.permission.decided',
      callId: 'c1',
      decision: 'deny',
      inputHash: 'h',
      by: 'user',
    });
    log.add(draft.settled('c2', 'cancelled', 'cancelled'));
    expect(projectTurn(log.facts).pending).toEqual([]);
    expect(projectTurn(log.facts).runs[0]?.status).toBe('running');
  });

  it('shows a withheld call with its reason and no proof', () => {
    const log = logBuilder();
    log.startRun('go');
    log.add(draft.stepStarted('s1'));
    log.add(draft.stepCompleted('s1', { calls: [draft.withheldCall('c1')] }));
    log.add(draft.settled('c1', 'not run', 'withheld'));
    expect(projectTurn(log.facts).runs[0]?.steps[0]?.toolCalls).toEqual([
      callView({
        callId: 'c1',
        name: 'tool',
        input: {},
        proof: null,
        withheld: 'the step finished with length',
        outcome: 'withheld',
        result: 'not run',
      }),
    ]);
  });
});
