import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../events/json.ts';
import { codingAgentReply } from '../../examples/coding-agent-script.ts';
import type { ScriptedCall } from '../../examples/pick-model.ts';

const buggy =
  'export function sum(numbers) {\n  let total = 0;\n  for (let index = 1; index < numbers.length; index += 1) total += numbers[index];\n  return total;\n}\n';
const fixed = buggy.replace('let index = 1;', 'let index = 0;');
const run = { name: 'runCommand', input: { command: 'node', args: ['--test'] } };
const read = { name: 'readFile', input: { path: 'sum.js' } };
const failing = '$ node --test\n[exit code 1]\n✖ sum adds every number';
const passing = '$ node --test\n[exit code 0]\n✔ sum adds every number';
const readResult = (source: string) =>
  `[sum.js: bytes 0-${source.length} of ${source.length}; end of file]\n${source}`;
const unknown =
  'The outcome of this call is unknown: it may or may not have run. Inspect the current state before retrying.';

/** The request the model gets after these calls and their results (one call per step). */
function requestAfter(...steps: [{ name: string; input: JsonObject }, string][]): ScriptedCall {
  const prompt: ScriptedCall['prompt'] = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: [{ type: 'text', text: 'The tests fail.' }] },
  ];
  steps.forEach(([call, result], index) => {
    const toolCallId = `call_${index}`;
    prompt.push(
      {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId, toolName: call.name, input: call.input }],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId,
            toolName: call.name,
            output: { type: 'text', value: result },
          },
        ],
      },
    );
  });
  return { prompt } as ScriptedCall;
}

const nextCall = (call: ScriptedCall) =>
  codingAgentReply(call).toolCalls?.map(({ name, input }) => ({ name, input }));
const reply = (call: ScriptedCall) => [codingAgentReply(call).text].flat().join('');

describe('the coding agent offline script', () => {
  it('plays run tests → read sum.js → write the fix → run tests → summary from the history alone', () => {
    expect(nextCall(requestAfter())).toEqual([run]);
    expect(nextCall(requestAfter([run, failing]))).toEqual([read]);
    expect(nextCall(requestAfter([run, failing], [read, readResult(buggy)]))).toEqual([
      { name: 'writeFile', input: { path: 'sum.js', content: fixed } },
    ]);
    const written = [
      { name: 'writeFile', input: { path: 'sum.js', content: fixed } },
      'Wrote 120 bytes to sum.js (replaced).',
    ] as const;
    expect(nextCall(requestAfter([run, failing], [read, readResult(buggy)], [...written]))).toEqual(
      [run],
    );
    const done = requestAfter(
      [run, failing],
      [read, readResult(buggy)],
      [...written],
      [run, passing],
    );
    expect(nextCall(done)).toBeUndefined();
    expect(reply(done)).toBe(
      'All tests pass now. The bug: the loop in sum.js started at index 1 and skipped the first number; it starts at 0 now.',
    );
  });

  it('runs the tests again after a test run whose outcome is unknown', () => {
    expect(nextCall(requestAfter([run, unknown]))).toEqual([run]);
    expect(
      nextCall(requestAfter([run, failing], [read, readResult(buggy)], [run, unknown])),
    ).toEqual([run]);
  });

  it('inspects sum.js after a write whose outcome is unknown, and writes nothing when the fix is there', () => {
    const write = { name: 'writeFile', input: { path: 'sum.js', content: fixed } };
    const steps: [{ name: string; input: JsonObject }, string][] = [
      [run, failing],
      [read, readResult(buggy)],
      [write, unknown],
    ];
    expect(nextCall(requestAfter(...steps))).toEqual([read]);
    expect(nextCall(requestAfter(...steps, [read, readResult(fixed)]))).toEqual([run]);
    expect(nextCall(requestAfter(...steps, [read, readResult(buggy)]))).toEqual([write]);
  });

  it('stops when a call is denied, and when the tests already pass', () => {
    const denied = 'This call was denied by the user; it was not run. Do not repeat it unchanged.';
    expect(nextCall(requestAfter([run, denied]))).toBeUndefined();
    expect(reply(requestAfter([run, denied]))).toBe(
      "Understood. Without running the tests I can't tell what fails, so I will stop here.",
    );
    const write = { name: 'writeFile', input: { path: 'sum.js', content: fixed } };
    expect(reply(requestAfter([run, failing], [read, readResult(buggy)], [write, denied]))).toBe(
      'Understood, I will leave sum.js as it is. The fix is to start its loop at index 0.',
    );
    expect(reply(requestAfter([run, passing]))).toBe(
      'The tests already pass; there is nothing to fix.',
    );
  });
});
