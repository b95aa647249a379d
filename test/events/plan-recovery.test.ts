import { describe, expect, it } from 'vitest';
import { planRecovery } from '../../events/plan-recovery.ts';
import { draft, logBuilder } from './log-builder.ts';
import { loadSampleLog, type SampleLogName } from './sample-logs.ts';

const teamPost = {
  url: 'https://chat.example.com/hooks/team',
  body: { text: 'turnlog 0.1.0 is out' },
};
const feedPost = { url: 'https://feeds.example.com/changelog', body: { version: '0.1.0' } };

const upTo = (name: SampleLogName, seq: number) =>
  planRecovery(loadSampleLog(name).filter((fact) => fact.seq <= seq));

describe('planRecovery on the sample logs', () => {
  it.each([
    'text-only',
    'multi-tool',
    'permission',
    'steering',
    'compaction',
    'recovered-tool',
    'retry-429',
    'stop',
  ] as const)('finds nothing to recover and no damage in %s', (name) => {
    expect(planRecovery(loadSampleLog(name))).toStrictEqual({ runs: [], damage: [] });
  });

  it('plans interrupted-tool: one indeterminate call, one proven call that never started', () => {
    expect(planRecovery(loadSampleLog('interrupted-tool'))).toStrictEqual({
      runs: [
        {
          sessionId: 'ses_mmatdz867d9cf81f4584',
          turnId: 'turn_mmatdz8649ca4e61686e',
          runId: 'run_mmatdz866fddbc5318ee',
          interruptedIn: 'settlingTools.running',
          indeterminate: [
            {
              stepId: 'step_mmatdz86e04cfba2ecf1',
              callId: 'toolu_01CHIKE6JFWYIkTUg274xhCE',
              name: 'httpPost',
              input: teamPost,
              marks: 0,
            },
          ],
          unresolved: [],
          neverStarted: [
            {
              stepId: 'step_mmatdz86e04cfba2ecf1',
              callId: 'toolu_01D0wbOj8VR4XqFK9uQeNlCZ',
              name: 'httpPost',
              input: feedPost,
              marks: 0,
            },
          ],
          withheld: [],
          pending: [],
          needsRunEnded: false,
          damage: [],
        },
      ],
      damage: [],
    });
  });

  describe('recovered-tool, cut at each point of its recovery', () => {
    const stepId = 'step_mmbqvd1obe19320abfb8';
    const first = {
      stepId,
      callId: 'toolu_01G0Emxmyu3VCvncpMTqmLmc',
      name: 'httpPost',
      input: teamPost,
      marks: 1,
    };
    const second = {
      stepId,
      callId: 'toolu_01JOdkjiHKAM2TwlXQqeSeCI',
      name: 'httpPost',
      input: feedPost,
      marks: 0,
    };
    const summary = (seq: number) => {
      const [run] = upTo('recovered-tool', seq).runs;
      return run === undefined
        ? undefined
        : {
            interruptedIn: run.interruptedIn,
            indeterminate: run.indeterminate,
            unresolved: run.unresolved,
            neverStarted: run.neverStarted,
            pending: run.pending,
            needsRunEnded: run.needsRunEnded,
          };
    };

    it('after tool.indeterminate: the marked call is unresolved and pending a person', () => {
      expect(summary(7)).toStrictEqual({
        interruptedIn: 'settlingTools.running',
        indeterminate: [],
        unresolved: [first],
        neverStarted: [second],
        pending: [
          {
            kind: 'indeterminate',
            callId: first.callId,
            name: 'httpPost',
            input: teamPost,
            inputHash: 'sha256:2afe925152cb82427c9a9161ec77eaf6',
          },
        ],
        needsRunEnded: false,
      });
      expect(summary(8)?.interruptedIn).toBe('awaitingPermission');
      expect(summary(8)?.pending).toHaveLength(1);
    });

    it('after the report-unknown decision: still unresolved, no longer pending', () => {
      expect(summary(9)).toStrictEqual({
        interruptedIn: 'settlingTools.running',
        indeterminate: [],
        unresolved: [first],
        neverStarted: [second],
        pending: [],
        needsRunEnded: false,
      });
    });

    it('after the unknown result: only the never-started call remains', () => {
      expect(summary(10)).toStrictEqual({
        interruptedIn: 'settlingTools.running',
        indeterminate: [],
        unresolved: [],
        neverStarted: [second],
        pending: [],
        needsRunEnded: false,
      });
    });

    it('after the second call started: it is the indeterminate one', () => {
      expect(summary(11)?.indeterminate).toStrictEqual([second]);
      expect(summary(11)?.neverStarted).toStrictEqual([]);
    });

    it('after the final step completed: only run.ended is missing', () => {
      expect(summary(14)).toStrictEqual({
        interruptedIn: 'terminal',
        indeterminate: [],
        unresolved: [],
        neverStarted: [],
        pending: [],
        needsRunEnded: true,
      });
      expect(summary(15)).toBeUndefined();
    });
  });

  it('plans permission cut while asking: parked with the pending decision', () => {
    const [run] = upTo('permission', 4).runs;
    expect(run?.interruptedIn).toBe('awaitingPermission');
    expect(run?.pending).toStrictEqual([
      {
        kind: 'permission',
        callId: 'toolu_011yZvyzRQVznWwMbahyA70M',
        name: 'runCommand',
        input: { command: 'rm -rf dist' },
        inputHash: 'sha256:8e6af7e16e017b3a77f2e1ec3a3f148a',
      },
    ]);
    expect(run?.neverStarted.map((call) => call.callId)).toStrictEqual([
      'toolu_011yZvyzRQVznWwMbahyA70M',
    ]);
  });

  it('names where each sample log was interrupted when cut short', () => {
    expect(
      [
        upTo('retry-429', 2),
        upTo('retry-429', 3),
        upTo('compaction', 11),
        upTo('stop', 6),
        upTo('text-only', 3),
      ].map((plan) => [plan.runs[0]?.interruptedIn, plan.runs[0]?.needsRunEnded]),
    ).toStrictEqual([
      ['requesting.streaming', false],
      ['requesting.backingOff', false],
      ['compacting', false],
      ['settlingTools.stopping', false],
      ['terminal', true],
    ]);
    expect(upTo('stop', 6).runs[0]?.indeterminate.map((call) => call.callId)).toStrictEqual([
      'toolu_01eEKWjBStxELyOkO8eSae04',
    ]);
  });

  it('plans a withheld call without its result apart from the proven calls that never started', () => {
    const log = logBuilder();
    log.startRun('go');
    log.add(draft.stepStarted('s1'));
    log.add(
      draft.stepCompleted('s1', {
        calls: [draft.withheldCall('c1'), draft.call('c2', { input: { n: 2 } })],
      }),
    );
    const [run] = planRecovery(log.facts).runs;
    expect([run?.withheld, run?.neverStarted]).toStrictEqual([
      [{ stepId: 's1', callId: 'c1', name: 'tool', input: {}, marks: 0 }],
      [{ stepId: 's1', callId: 'c2', name: 'tool', input: { n: 2 }, marks: 0 }],
    ]);
    log.add(draft.settled('c1', 'not run', 'withheld'));
    expect(planRecovery(log.facts).runs[0]?.withheld).toStrictEqual([]);
  });

  it('plans only the unfinished run of a session whose earlier runs ended', () => {
    const plan = upTo('permission', 13);
    expect(plan.runs.map((run) => [run.runId, run.interruptedIn])).toStrictEqual([
      ['run_mm93lv2f6f9cd2595c15', 'settlingTools.deciding'],
    ]);
  });
});
