import { describe, expect, it } from 'vitest';
import { projectTurn } from '../../events/project-turn.ts';
import { allowedByPolicy, callView, completedStep, usage } from './expected-views.ts';
import { loadSampleLog } from './sample-logs.ts';

const anthropic = { provider: 'anthropic.messages', modelId: 'claude-sonnet-4-5' } as const;
const openaiMini = { provider: 'openai.responses', modelId: 'gpt-5-mini' } as const;

describe('projectTurn on the finished sample logs', () => {
  it('projects text-only to two completed runs and session totals that keep reasoning unknown', () => {
    expect(projectTurn(loadSampleLog('text-only'))).toEqual({
      sessionId: 'ses_mm8ypg3k0876bb5aba78',
      runs: [
        {
          runId: 'run_mm8ypg3k6df1653c9d7f',
          turnId: 'turn_mm8ypg3k64d6c6b94f45',
          input: 'What does the turnlog package do, in one sentence?',
          status: 'completed',
          state: 'terminal',
          reason: 'end_turn',
          error: undefined,
          startedAt: '2026-03-02T09:14:05.120Z',
          endedAt: '2026-03-02T09:14:06.964Z',
          steps: [
            completedStep({
              stepId: 'step_mm8ypg3k6c1307de2efd',
              ...anthropic,
              finishReason: { unified: 'stop', raw: 'end_turn' },
              usage: usage(412, 27, undefined, 0),
              text: 'turnlog runs LLM agent turns as an XState machine and writes every transition to a durable event log.',
            }),
          ],
          text: 'turnlog runs LLM agent turns as an XState machine and writes every transition to a durable event log.',
          pending: [],
          usage: usage(412, 27, undefined, 0),
        },
        {
          runId: 'run_mm8yqdb894d7deff2781',
          turnId: 'turn_mm8yqdb8a0265bdb2537',
          input: 'And what does it write to disk?',
          status: 'completed',
          state: 'terminal',
          reason: 'end_turn',
          error: undefined,
          startedAt: '2026-03-02T09:14:48.164Z',
          endedAt: '2026-03-02T09:14:50.383Z',
          steps: [
            completedStep({
              stepId: 'step_mm8yqdb87fcb4a8451e0',
              ...anthropic,
              finishReason: { unified: 'stop', raw: 'end_turn' },
              usage: usage(451, 38, undefined, 384),
              text: 'Only the event log: one JSON document per session under .turnlog/, split into segments, each written to a temp file, fsynced and renamed into place.',
            }),
          ],
          text: 'Only the event log: one JSON document per session under .turnlog/, split into segments, each written to a temp file, fsynced and renamed into place.',
          pending: [],
          usage: usage(451, 38, undefined, 384),
        },
      ],
      pending: [],
      usage: usage(863, 65, undefined, 384),
    });
  });

  it('projects multi-tool with both calls, their outcomes and result texts', () => {
    const view = projectTurn(loadSampleLog('multi-tool'));
    const finalText =
      'There is no docs/install.md. docs/ holds guide.md, setup.md and troubleshooting.md; the install steps are most likely in setup.md. Shall I summarize that one?';
    expect(view.runs).toEqual([
      {
        runId: 'run_mm90fb88ba5cc1d4b9b5',
        turnId: 'turn_mm90fb889e3a4821f64c',
        input: 'Summarize the install guide in docs/ and tell me what else is in there.',
        status: 'completed',
        state: 'terminal',
        reason: 'end_turn',
        error: undefined,
        startedAt: '2026-03-02T10:02:11.480Z',
        endedAt: '2026-03-02T10:02:17.102Z',
        steps: [
          completedStep({
            stepId: 'step_mm90fb8850fcab03d700',
            ...openaiMini,
            finishReason: { unified: 'tool-calls', raw: undefined },
            usage: usage(1204, 96, 48, 0),
            text: "I'll list docs/ and read the install guide.",
            reasoning:
              'The user wants the install guide summarized and the rest of docs/ listed. List docs/ and read docs/install.md in parallel.',
            toolCalls: [
              callView({
                callId: 'call_BAQfNK0SDCrgVqbop1Srpwbx',
                name: 'listFiles',
                input: { path: 'docs' },
                permission: allowedByPolicy,
                started: true,
                outcome: 'success',
                result: 'guide.md\nsetup.md\ntroubleshooting.md',
              }),
              callView({
                callId: 'call_bJbCYm4CXOhcShxV8YqAPSaF',
                name: 'readFile',
                input: { path: 'docs/install.md' },
                permission: allowedByPolicy,
                started: true,
                outcome: 'error',
                result: "ENOENT: no such file or directory, open 'docs/install.md'",
              }),
            ],
          }),
          completedStep({
            stepId: 'step_mm90fdnf3d81e708b9ed',
            ...openaiMini,
            finishReason: { unified: 'stop', raw: undefined },
            usage: usage(1391, 71, 0, 1152),
            text: finalText,
          }),
        ],
        text: finalText,
        pending: [],
        usage: usage(2595, 167, 48, 1152),
      },
    ]);
    expect(view.usage).toEqual(usage(2595, 167, 48, 1152));
    expect(view.pending).toEqual([]);
  });

  it('projects permission with the user’s allow in run 1 and deny (with its reason) in run 2', () => {
    const view = projectTurn(loadSampleLog('permission'));
    expect(view.runs.map((run) => [run.runId, run.status, run.reason, run.text])).toEqual([
      ['run_mm93k8my604cb5581f3f', 'completed', 'end_turn', 'Done: dist/ is gone.'],
      [
        'run_mm93lv2f6f9cd2595c15',
        'completed',
        'end_turn',
        "Understood, I won't push. Tell me when you're ready.",
      ],
    ]);
    expect(view.runs[0]?.steps[0]).toEqual(
      completedStep({
        stepId: 'step_mm93k8my1894fd2f4094',
        ...anthropic,
        finishReason: { unified: 'tool-calls', raw: 'tool_use' },
        usage: usage(988, 74, undefined, 0),
        text: "I'll remove the dist/ folder.",
        reasoning:
          'The build output is dist/. Removing it needs runCommand, which asks the user first.',
        toolCalls: [
          callView({
            callId: 'toolu_011yZvyzRQVznWwMbahyA70M',
            name: 'runCommand',
            input: { command: 'rm -rf dist' },
            permission: { decision: 'allow', by: 'user', reason: undefined },
            started: true,
            outcome: 'success',
            result: 'exit code 0',
          }),
        ],
      }),
    );
    expect(view.runs[1]?.steps[0]?.toolCalls).toEqual([
      callView({
        callId: 'toolu_01gLSRY9WvfYIhcZjR03wKGN',
        name: 'runCommand',
        input: { command: 'git push origin HEAD' },
        permission: {
          decision: 'deny',
          by: 'user',
          reason: 'Not yet, I want to review the diff first.',
        },
        started: false,
        outcome: 'denied',
        result: 'The user denied this call: Not yet, I want to review the diff first.',
      }),
    ]);
    expect(view.runs.map((run) => run.steps.length)).toEqual([2, 2]);
    expect(view.runs.map((run) => run.usage)).toEqual([
      usage(2090, 86, undefined, 896),
      usage(2377, 77, undefined, 2048),
    ]);
    expect(view.usage).toEqual(usage(4467, 163, undefined, 2944));
  });

  it('projects steering with a whole-request call and usage whose cached tokens stay unknown', () => {
    const view = projectTurn(loadSampleLog('steering'));
    expect(view.runs).toHaveLength(1);
    expect(view.runs[0]?.steps[0]?.toolCalls).toEqual([
      callView({
        callId: 'TfhovlIc1CvAiadd',
        name: 'runTests',
        input: { pattern: 'test/**/*.test.ts' },
        proof: 'whole-request',
        permission: allowedByPolicy,
        started: true,
        outcome: 'success',
        result:
          '2 failed, 41 passed\nFAIL test/store/lowdb-store.test.ts > reopens after close\nFAIL test/events/project-turn.test.ts > sums usage',
      }),
    ]);
    expect(view.runs[0]?.text).toBe(
      'One store test fails: test/store/lowdb-store.test.ts > reopens after close.',
    );
    expect(view.usage).toEqual(usage(1809, 75, 317, undefined));
  });

  it('projects compaction with the overflowed step failed and the totals of all three runs', () => {
    const view = projectTurn(loadSampleLog('compaction'));
    expect(view.runs.map((run) => [run.status, run.steps.map((step) => step.status)])).toEqual([
      ['completed', ['completed', 'completed']],
      ['completed', ['completed']],
      ['completed', ['failed', 'completed']],
    ]);
    expect(view.runs[2]?.steps[0]).toEqual({
      stepId: 'step_mmabtqz624119020f4b2',
      attempts: 1,
      status: 'failed',
      provider: 'openai.responses',
      modelId: 'gpt-5',
      finishReason: undefined,
      usage: undefined,
      text: '',
      reasoning: '',
      toolCalls: [],
      providerTools: [],
      error: {
        kind: 'context_overflow',
        retryable: false,
        message:
          'Your input exceeds the context window of this model. Please adjust your input and try again.',
        status: 400,
      },
    });
    expect(view.runs[0]?.steps[0]?.text).toBe('');
    expect(view.runs.map((run) => run.usage)).toEqual([
      usage(9410, 452, 256, 1280),
      usage(2214, 388, 192, 0),
      usage(1802, 960, 320, undefined),
    ]);
    expect(view.usage).toEqual(usage(13426, 1800, 768, 1280));
  });
});
