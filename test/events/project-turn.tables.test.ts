import { describe, expect, it } from 'vitest';
import { projectTurn, type RunView, type StepView } from '../../events/project-turn.ts';
import { allowedByPolicy, callView } from './expected-views.ts';
import { loadSampleLog, type SampleLogName } from './sample-logs.ts';

/** Every field of a run view except steps, calls and pending (asserted elsewhere), as a row. */
const runRow = (run: RunView) => [
  run.runId,
  run.turnId,
  run.input,
  run.status,
  run.state,
  run.reason,
  run.error,
  run.startedAt,
  run.endedAt,
  run.text,
  run.pending.length,
];

/** Every field of a step view except its calls (counted here), as a row. */
const stepRow = (step: StepView) => [
  step.stepId,
  step.attempts,
  step.status,
  step.provider,
  step.modelId,
  step.finishReason?.unified,
  step.finishReason?.raw,
  step.usage === undefined
    ? undefined
    : [
        step.usage.inputTokens,
        step.usage.outputTokens,
        step.usage.reasoningTokens,
        step.usage.cachedInputTokens,
      ],
  step.text,
  step.reasoning,
  step.error?.kind,
  step.toolCalls.length,
];

const rows = (name: SampleLogName) => {
  const view = projectTurn(loadSampleLog(name));
  return { runs: view.runs.map(runRow), steps: view.runs.flatMap((run) => run.steps.map(stepRow)) };
};

const u = undefined;
const anthropic = ['anthropic.messages', 'claude-sonnet-4-5'];
const release = 'Post the release note to the team channel and to the changelog feed.';

describe('projectTurn rows of every sample log', () => {
  it('gives the exact run and step rows of text-only', () => {
    // biome-ignore format: one row per run and per step
    expect(rows('text-only')).toStrictEqual({
      runs: [
        ['run_mm8ypg3k6df1653c9d7f', 'turn_mm8ypg3k64d6c6b94f45', 'What does the turnlog package do, in one sentence?', 'completed', 'terminal', 'end_turn', u, '2026-03-02T09:14:05.120Z', '2026-03-02T09:14:06.964Z', 'turnlog runs LLM agent turns as an XState machine and writes every transition to a durable event log.', 0],
        ['run_mm8yqdb894d7deff2781', 'turn_mm8yqdb8a0265bdb2537', 'And what does it write to disk?', 'completed', 'terminal', 'end_turn', u, '2026-03-02T09:14:48.164Z', '2026-03-02T09:14:50.383Z', 'Only the event log: one JSON document per session under .turnlog/, split into segments, each written to a temp file, fsynced and renamed into place.', 0],
      ],
      steps: [
        ['step_mm8ypg3k6c1307de2efd', 1, 'completed', ...anthropic, 'stop', 'end_turn', [412, 27, u, 0], 'turnlog runs LLM agent turns as an XState machine and writes every transition to a durable event log.', '', u, 0],
        ['step_mm8yqdb87fcb4a8451e0', 1, 'completed', ...anthropic, 'stop', 'end_turn', [451, 38, u, 384], 'Only the event log: one JSON document per session under .turnlog/, split into segments, each written to a temp file, fsynced and renamed into place.', '', u, 0],
      ],
    });
  });

  it('gives the exact run and step rows of multi-tool', () => {
    const answer =
      'There is no docs/install.md. docs/ holds guide.md, setup.md and troubleshooting.md; the install steps are most likely in setup.md. Shall I summarize that one?';
    // biome-ignore format: one row per run and per step
    expect(rows('multi-tool')).toStrictEqual({
      runs: [
        ['run_mm90fb88ba5cc1d4b9b5', 'turn_mm90fb889e3a4821f64c', 'Summarize the install guide in docs/ and tell me what else is in there.', 'completed', 'terminal', 'end_turn', u, '2026-03-02T10:02:11.480Z', '2026-03-02T10:02:17.102Z', answer, 0],
      ],
      steps: [
        ['step_mm90fb8850fcab03d700', 1, 'completed', 'openai.responses', 'gpt-5-mini', 'tool-calls', u, [1204, 96, 48, 0], "I'll list docs/ and read the install guide.", 'The user wants the install guide summarized and the rest of docs/ listed. List docs/ and read docs/install.md in parallel.', u, 2],
        ['step_mm90fdnf3d81e708b9ed', 1, 'completed', 'openai.responses', 'gpt-5-mini', 'stop', u, [1391, 71, 0, 1152], answer, '', u, 0],
      ],
    });
  });

  it('gives the exact run and step rows of permission', () => {
    // biome-ignore format: one row per run and per step
    expect(rows('permission')).toStrictEqual({
      runs: [
        ['run_mm93k8my604cb5581f3f', 'turn_mm93k8myc0068a7ff6e6', 'Clean the build output.', 'completed', 'terminal', 'end_turn', u, '2026-03-02T11:30:00.250Z', '2026-03-02T11:30:12.975Z', 'Done: dist/ is gone.', 0],
        ['run_mm93lv2f6f9cd2595c15', 'turn_mm93lv2f7b46a1479469', 'Push the branch to origin.', 'completed', 'terminal', 'end_turn', u, '2026-03-02T11:31:15.975Z', '2026-03-02T11:31:40.535Z', "Understood, I won't push. Tell me when you're ready.", 0],
      ],
      steps: [
        ['step_mm93k8my1894fd2f4094', 1, 'completed', ...anthropic, 'tool-calls', 'tool_use', [988, 74, u, 0], "I'll remove the dist/ folder.", 'The build output is dist/. Removing it needs runCommand, which asks the user first.', u, 1],
        ['step_mm93khik3188d102156e', 1, 'completed', ...anthropic, 'stop', 'end_turn', [1102, 12, u, 896], 'Done: dist/ is gone.', '', u, 0],
        ['step_mm93lv2f9d2866c38642', 1, 'completed', ...anthropic, 'tool-calls', 'tool_use', [1141, 58, u, 1024], "I'll push the current branch.", '', u, 1],
        ['step_mm93md82883ff04f2adf', 1, 'completed', ...anthropic, 'stop', 'end_turn', [1236, 19, u, 1024], "Understood, I won't push. Tell me when you're ready.", '', u, 0],
      ],
    });
  });

  it('gives the exact run and step rows of steering', () => {
    const answer = 'One store test fails: test/store/lowdb-store.test.ts > reopens after close.';
    const google = ['google.generative-ai', 'gemini-2.5-flash'];
    // biome-ignore format: one row per run and per step
    expect(rows('steering')).toStrictEqual({
      runs: [
        ['run_mm98eiac69cb53483123', 'turn_mm98eiacc096fc6773c3', 'Run the tests and tell me what fails.', 'completed', 'terminal', 'end_turn', u, '2026-03-02T13:45:30.900Z', '2026-03-02T13:45:43.894Z', answer, 0],
      ],
      steps: [
        ['step_mm98eiac284bd3304c71', 1, 'completed', ...google, 'tool-calls', 'STOP', [806, 31, 112, u], 'Running the test suite.', '', u, 1],
        ['step_mm98eqz691a7adeffc6e', 1, 'completed', ...google, 'stop', 'STOP', [1003, 44, 205, u], answer, '', u, 0],
      ],
    });
  });

  it('gives the exact run and step rows of compaction', () => {
    const gpt5 = ['openai.responses', 'gpt-5'];
    const explained =
      'tokenize() runs one global regular expression over the source and turns each match into a token.';
    const faster =
      'Scan the source once with a hand-written state machine instead of a global regular expression.';
    const patch =
      '--- a/src/tokenizer.ts\n+++ b/src/tokenizer.ts\n@@ -1,5 +1,5 @@\n-export function tokenize(source: string): Token[] {\n+export function tokenize(source: string): Token[] { // single pass';
    // biome-ignore format: one row per run and per step
    expect(rows('compaction')).toStrictEqual({
      runs: [
        ['run_mmabopmo773d2f85b581', 'turn_mmabopmobf537a0dc512', 'Read src/tokenizer.ts and explain how it splits input.', 'completed', 'terminal', 'end_turn', u, '2026-03-03T08:05:12.000Z', '2026-03-03T08:05:19.794Z', explained, 0],
        ['run_mmabqwy2ef0145a9cb46', 'turn_mmabqwy265c0c019db21', 'Suggest a faster approach.', 'completed', 'terminal', 'end_turn', u, '2026-03-03T08:06:54.794Z', '2026-03-03T08:07:07.026Z', faster, 0],
        ['run_mmabtqz6b82638a3597d', 'turn_mmabtqz67b4c08b2c34d', 'Write that as a patch.', 'completed', 'terminal', 'end_turn', u, '2026-03-03T08:09:07.026Z', '2026-03-03T08:09:23.903Z', patch, 0],
      ],
      steps: [
        ['step_mmabopmo7d06b7cf07e5', 1, 'completed', ...gpt5, 'tool-calls', u, [1480, 40, 0, 0], '', '', u, 1],
        ['step_mmaboqwv918997ca8410', 1, 'completed', ...gpt5, 'stop', u, [7930, 412, 256, 1280], explained, '', u, 0],
        ['step_mmabr0pz6e5a21be9ec1', 1, 'completed', ...gpt5, 'stop', u, [2214, 388, 192, 0], faster, '', u, 0],
        ['step_mmabtqz624119020f4b2', 1, 'failed', ...gpt5, u, u, u, '', '', 'context_overflow', 0],
        ['step_mmabtvh2fb6e04533a68', 1, 'completed', ...gpt5, 'stop', u, [1802, 960, 320, u], patch, '', u, 0],
      ],
    });
    expect(projectTurn(loadSampleLog('compaction')).runs[0]?.steps[0]?.toolCalls).toStrictEqual([
      callView({
        callId: 'call_v32opZorIWps84X3rOdc0HlD',
        name: 'readFile',
        input: { path: 'src/tokenizer.ts' },
        permission: allowedByPolicy,
        started: true,
        outcome: 'success',
        result:
          'export function tokenize(source: string): Token[] {\n  const tokens: Token[] = [];\n  for (const match of source.matchAll(pattern)) tokens.push(toToken(match));\n  return tokens;\n}\n[… truncated: 18,412 more characters]',
      }),
    ]);
  });

  it('gives the exact run and step rows of interrupted-tool and recovered-tool', () => {
    // biome-ignore format: one row per run and per step
    expect(rows('interrupted-tool')).toStrictEqual({
      runs: [
        ['run_mmatdz866fddbc5318ee', 'turn_mmatdz8649ca4e61686e', release, 'running', 'settlingTools.running', u, u, '2026-03-03T16:20:44.310Z', u, 'Posting to both.', 0],
      ],
      steps: [
        ['step_mmatdz86e04cfba2ecf1', 1, 'completed', ...anthropic, 'tool-calls', 'tool_use', [1530, 121, u, 0], 'Posting to both.', '', u, 2],
      ],
    });
    const answer =
      'The changelog feed accepted the note (HTTP 200). The team-channel post may or may not have gone out; please check the channel before I post again.';
    // biome-ignore format: one row per run and per step
    expect(rows('recovered-tool')).toStrictEqual({
      runs: [
        ['run_mmbqvd1o18feda6df07d', 'turn_mmbqvd1o9ae1496835c7', release, 'completed', 'terminal', 'end_turn', u, '2026-03-04T07:58:02.700Z', '2026-03-04T08:04:07.406Z', answer, 0],
      ],
      steps: [
        ['step_mmbqvd1obe19320abfb8', 1, 'completed', ...anthropic, 'tool-calls', 'tool_use', [1530, 121, u, 0], 'Posting to both.', '', u, 2],
        ['step_mmbr35063b9d6d9b9a14', 1, 'completed', ...anthropic, 'stop', 'end_turn', [1790, 64, u, 1408], answer, '', u, 0],
      ],
    });
  });

  it('gives the exact run and step rows of retry-429 and stop', () => {
    const description = 'Durable LLM agent turns: an XState machine over an append-only event log.';
    // biome-ignore format: one row per run and per step
    expect(rows('retry-429')).toStrictEqual({
      runs: [
        ['run_mmbzil0q27a4ed35f4e8', 'turn_mmbzil0q58c5e86ad073', 'Give me a one-line description for package.json.', 'completed', 'terminal', 'end_turn', u, '2026-03-04T12:00:03.050Z', '2026-03-04T12:00:06.542Z', description, 0],
      ],
      steps: [
        ['step_mmbzil0q6148dacb361e', 2, 'completed', 'openai.responses', 'gpt-5-mini', 'stop', u, [688, 23, 0, 0], description, '', 'rate_limit', 0],
      ],
    });
    // biome-ignore format: one row per run and per step
    expect(rows('stop')).toStrictEqual({
      runs: [
        ['run_mmc7fbg01e98d2212f70', 'turn_mmc7fbg0bdec64b3a37f', 'Reindex the whole workspace.', 'aborted', 'terminal', 'stop_requested', u, '2026-03-04T15:41:27.600Z', '2026-03-04T15:41:41.684Z', 'Starting the reindex; it can take a few minutes.', 0],
      ],
      steps: [
        ['step_mmc7fbg0105834258a7c', 1, 'completed', ...anthropic, 'tool-calls', 'tool_use', [702, 45, u, 0], 'Starting the reindex; it can take a few minutes.', '', u, 1],
      ],
    });
  });
});
