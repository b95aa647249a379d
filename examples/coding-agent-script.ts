// The coding agent's offline model. It plays run tests → read sum.js → write the fix → run
// tests → summary, but it decides each step from the conversation it is sent (the history
// projected from the log), not from a step counter: a run recovered in a new process, where a
// fresh model starts from zero, continues exactly where the log left off.
import type { JsonObject, ScriptedResponse } from '../index.ts';
import type { ScriptedCall } from './pick-model.ts';

/** One tool result in the conversation, with the call it answers. */
interface Result {
  name: string;
  input: JsonObject;
  text: string;
}

const runTests = { name: 'runCommand', input: { command: 'node', args: ['--test'] } };
const readSum = { name: 'readFile', input: { path: 'sum.js' } };
const buggyLoop = 'let index = 1;';
const fixedLoop = 'let index = 0;';

/**
 * The offline coding agent's next response, from the tool results so far.
 *
 * @example
 * const model = await pickModel(codingAgentReply);
 */
export function codingAgentReply(call: ScriptedCall): ScriptedResponse {
  const results = toolResults(call);
  const last = results.at(-1);
  if (last?.text.startsWith('This call was denied')) {
    return last.name === 'writeFile'
      ? say('Understood, I will leave sum.js as it is. The fix is to start its loop at index 0.')
      : say("Understood. Without running the tests I can't tell what fails, so I will stop here.");
  }
  const unknown = last?.text.startsWith('The outcome of this call is unknown') === true;
  const fixedAt = results.findLastIndex(
    (result) =>
      (result.name === 'writeFile' && result.text.startsWith('Wrote')) ||
      (isReadOfSum(result) && result.text.includes(fixedLoop)),
  );
  const testedAt = results.findLastIndex((result) => exitCode(result) !== undefined);
  const tested = results[testedAt];

  if (unknown && last?.name === 'runCommand') {
    return act(
      "I can't tell whether that test run finished, so I will run the tests again.",
      runTests,
    );
  }
  if (unknown && last?.name === 'writeFile') {
    return act("I can't tell whether the fix was written. Let me look at sum.js first.", readSum);
  }
  if (tested === undefined) return act('Let me run the tests first.', runTests);
  if (fixedAt === -1) {
    if (exitCode(tested) === 0) return say('The tests already pass; there is nothing to fix.');
    const read = results.findLast(isReadOfSum);
    if (read === undefined || results.indexOf(read) < testedAt) {
      return act('One test fails: sum([1, 2, 3]) returns 5, not 6. Let me read sum.js.', readSum);
    }
    const source = read.text.slice(read.text.indexOf('\n') + 1);
    return act(
      'Found it: the loop starts at index 1, so the first number is skipped. I will start it at 0.',
      {
        name: 'writeFile',
        input: { path: 'sum.js', content: source.replace(buggyLoop, fixedLoop) },
      },
    );
  }
  if (testedAt < fixedAt) return act('The fix is in place. Running the tests again.', runTests);
  return exitCode(tested) === 0
    ? say(
        'All tests pass now. The bug: the loop in sum.js started at index 1 and skipped the ',
        'first number; it starts at 0 now.',
      )
    : say('The tests still fail after the fix; the output above shows what is left.');
}

function toolResults(call: ScriptedCall): Result[] {
  const inputs = new Map<string, JsonObject>();
  const results: Result[] = [];
  for (const message of call.prompt) {
    if (message.role === 'assistant') {
      for (const part of message.content) {
        if (part.type === 'tool-call') inputs.set(part.toolCallId, asRecord(part.input));
      }
    }
    if (message.role === 'tool') {
      for (const part of message.content) {
        if (part.type !== 'tool-result') continue;
        const output = part.output;
        const text = output.type === 'text' || output.type === 'error-text' ? output.value : '';
        results.push({ name: part.toolName, input: inputs.get(part.toolCallId) ?? {}, text });
      }
    }
  }
  return results;
}

function asRecord(input: unknown): JsonObject {
  const value = typeof input === 'string' ? JSON.parse(input) : input;
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {};
}

function isReadOfSum(result: Result): boolean {
  return (
    result.name === 'readFile' && result.input.path === 'sum.js' && result.text.startsWith('[')
  );
}

/** The exit code a `runCommand` result reports, if the command ran to an exit. */
function exitCode(result: Result | undefined): number | undefined {
  const match = result?.name === 'runCommand' ? /^\[exit code (\d+)\]$/m.exec(result.text) : null;
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

function act(text: string, toolCall: { name: string; input: JsonObject }): ScriptedResponse {
  return { text: splitWords(text), toolCalls: [toolCall] };
}

function say(...text: string[]): ScriptedResponse {
  return { text: splitWords(text.join('')) };
}

/** Streams a sentence a few words at a time, as a provider would. */
function splitWords(text: string): string[] {
  return text.match(/(\S+\s*){1,3}/g) ?? [text];
}
