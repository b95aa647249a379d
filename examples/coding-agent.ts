// A terminal coding agent over a copy of a tiny project whose test fails
// (examples/coding-agent-project). It runs the tests, reads the code, asks before writing the
// fix, and runs the tests again; every command and every write waits for your y/n.
//
// Run: npx node examples/coding-agent.ts
//   Offline with a scripted model unless OPENAI_API_KEY or GOOGLE_GENERATIVE_AI_API_KEY is set.
//   The log and the working copy live in .turnlog/coding-agent/ (under TURNLOG_DIR if set);
//   CODING_AGENT_PROJECT points at another project to copy instead.
// Ctrl-C stops the run cleanly (it ends `aborted` in the log). Kill it instead (kill -9) and run
// it again: it recovers the session from the log, says what it found, and carries on.
import { cp, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createRuntime,
  type Fact,
  type FactOf,
  lowdbStore,
  type RecoveredRun,
  recordedStateHasTag,
  type TurnHandle,
  workspaceTools,
} from '../index.ts';
import { codingAgentReply } from './coding-agent-script.ts';
import { pickModel } from './pick-model.ts';
import { createTerminalPrompt } from './terminal-prompt.ts';

const home = path.join(process.env.TURNLOG_DIR ?? '.turnlog', 'coding-agent');
const workspace = path.join(home, 'workspace');
const project =
  process.env.CODING_AGENT_PROJECT ??
  fileURLToPath(new URL('coding-agent-project', import.meta.url));
const system = [
  'You are a coding agent in a small JavaScript project (the workspace).',
  'Run its tests with runCommand (command "node", args ["--test"]), read files with readFile,',
  'fix bugs with writeFile (the whole new file content), then run the tests again.',
  'Keep your messages short.',
].join(' ');
const task = 'The tests fail. Find the bug, fix it, and check that the tests pass.';

const model = await pickModel(codingAgentReply);
const store = lowdbStore({ dir: path.join(home, 'log') });
const open = await store.openRuns();
if (open.length === 0) {
  // A fresh start: a new copy of the project (earlier sessions stay in the log).
  await rm(workspace, { recursive: true, force: true });
  await cp(project, workspace, { recursive: true });
  console.log(`workspace: copied ${path.relative('.', project)} to ${workspace}`);
}
const runtime = createRuntime({
  model,
  system,
  store,
  tools: workspaceTools({
    root: workspace,
    // The tests run with the Node that runs this agent.
    runCommand: { path: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH}` },
  }),
});
const prompt = createTerminalPrompt();
let turn: TurnHandle | undefined;
let stopping = false;

// Ctrl-C: stop the run through the log, let it end, then exit (a second Ctrl-C exits at once).
process.on('SIGINT', () => {
  if (stopping || turn === undefined) process.exit(130);
  stopping = true;
  console.log('\nstopping the run (Ctrl-C)…');
  prompt.cancel();
  runtime.stop({ sessionId: turn.sessionId, reason: 'stopped with Ctrl-C' }).catch(() => {});
});

const [recovered] = await runtime.recover();
if (recovered?.status === 'damaged') {
  console.log(`the log of ${recovered.sessionId} is damaged and cannot be resumed:`);
  for (const damage of recovered.damage) console.log(`  ${damage}`);
  process.exit(1);
}
let replayedThrough = 0;
if (recovered !== undefined && recovered.status !== 'ended') {
  turn = recovered.turn;
  replayedThrough = await describeRecovery(recovered);
} else {
  if (recovered !== undefined)
    console.log(`recovered ${recovered.sessionId}: it had already ended.`);
  console.log(`you: ${task}`);
  turn = await runtime.send({ sessionId: `coding-agent-${Date.now()}`, text: task });
}

const finished = await watch(turn, replayedThrough);
if (finished) {
  const result = await turn.done;
  const steps = `${result.steps} step${result.steps === 1 ? '' : 's'}`;
  console.log(`\nrun ${result.status} (${result.reason}) after ${steps}.`);
  if (result.status === 'aborted') process.exitCode = 130;
} else {
  console.log(
    'No answer on stdin: the run stays parked in the log. Run the agent again to answer.',
  );
}
prompt.close();
await runtime.close();

/** Prints the run's events from `replayedThrough` on, asking for every decision. False: stdin ended first. */
async function watch(handle: TurnHandle, replayedThrough: number): Promise<boolean> {
  let midLine = false;
  const line = (text: string) => {
    console.log(`${midLine ? '\n' : ''}${text}`);
    midLine = false;
  };
  for await (const event of handle.events) {
    if (event.type === 'text.delta') {
      process.stdout.write(event.text);
      midLine = !event.text.endsWith('\n');
      continue;
    }
    if (!('seq' in event) || event.seq <= replayedThrough) continue;
    if (event.type === 'tool.started') line(`→ ${describeCall(event.name, event.input)}`);
    if (event.type === 'tool.settled') line(`← ${event.outcome}: ${excerpt(event.text)}`);
    if (recordedStateHasTag(event.state, 'needsPerson')) {
      if (midLine) process.stdout.write('\n');
      midLine = false;
      if (!(await decidePending(handle.sessionId)) && !stopping) return false;
    }
  }
  if (midLine) process.stdout.write('\n');
  return true;
}

/** Asks for every pending decision. False when stdin ended (or Ctrl-C) before an answer. */
async function decidePending(sessionId: string): Promise<boolean> {
  for (const pending of await runtime.pending(sessionId)) {
    if (pending.kind === 'permission') {
      if (pending.name === 'writeFile') await showWrite(pending.input);
      const answer = await prompt.choose(`Allow ${describeCall(pending.name, pending.input)}?`, [
        'yes',
        'no',
      ] as const);
      if (answer === undefined) return false;
      const decision = answer === 'yes' ? 'allow' : 'deny';
      await runtime.decide({ sessionId, callId: pending.callId, decision });
    } else {
      console.log(
        `${pending.callId} (${describeCall(pending.name, pending.input)}) started before the ` +
          'crash and never finished: it may or may not have run, and it will not run again.',
      );
      const answer = await prompt.choose(
        'Tell the model its outcome is unknown, or abort the run?',
        ['report-unknown', 'abort'] as const,
      );
      if (answer === undefined) return false;
      await runtime.decide({ sessionId, callId: pending.callId, decision: answer });
    }
  }
  return true;
}

/** Says what `recover()` found; returns the seq the log had reached before this recovery. */
async function describeRecovery(
  found: Exclude<RecoveredRun, { status: 'damaged' }>,
): Promise<number> {
  const facts = await runtime.facts(found.sessionId);
  const run = facts.filter((fact) => fact.runId === found.runId);
  const settled = run.filter(
    (fact): fact is FactOf<'tool.settled'> => fact.type === 'tool.settled',
  );
  console.log(`recovered session ${found.sessionId} from the log (${run.length} facts):`);
  console.log(`  it was interrupted in: ${found.interruptedIn ?? 'an unknown state'}`);
  console.log(
    `  tools settled before: ${settled.map((fact) => `${fact.name} (${fact.outcome})`).join(', ') || 'none'}`,
  );
  const names = new Map(
    run.flatMap((fact) => ('callId' in fact && 'name' in fact ? [[fact.callId, fact.name]] : [])),
  );
  console.log(
    `  indeterminate calls: ${found.indeterminate.map((callId) => `${callId} (${names.get(callId) ?? '?'})`).join(', ') || 'none'}`,
  );
  const pending = await runtime.pending(found.sessionId);
  console.log(
    `  pending decisions: ${pending.map((decision) => `${decision.callId} ${decision.name} (${decision.kind})`).join(', ') || 'none'}`,
  );
  console.log(`  status: ${found.status === 'parked' ? 'parked, waiting for you' : 'resumed'}`);
  const recovery = run.findLast((fact: Fact) => fact.type === 'run.recovered');
  return (recovery?.seq ?? Number.POSITIVE_INFINITY) - 1;
}

/** Shows what a pending `writeFile` would change, line by line. */
async function showWrite(input: unknown) {
  const { path: file, content } = input as { path: string; content: string };
  const before = await readFile(path.join(workspace, file), 'utf8').catch(() => '');
  const oldLines = before.split('\n');
  const newLines = content.split('\n');
  for (let index = 0; index < Math.max(oldLines.length, newLines.length); index += 1) {
    if (oldLines[index] === newLines[index]) continue;
    if (oldLines[index] !== undefined) console.log(`  - ${oldLines[index]}`);
    if (newLines[index] !== undefined) console.log(`  + ${newLines[index]}`);
  }
}

function describeCall(name: string, input: unknown): string {
  const values = (input ?? {}) as {
    command?: string;
    args?: string[];
    path?: string;
    content?: string;
  };
  if (name === 'runCommand')
    return `runCommand: ${[values.command, ...(values.args ?? [])].join(' ')}`;
  if (name === 'writeFile')
    return `writeFile: ${values.path} (${values.content?.length ?? 0} characters)`;
  if (name === 'readFile' || name === 'listFiles') return `${name}: ${values.path ?? '.'}`;
  return `${name} ${JSON.stringify(input)}`;
}

/** The first lines of a tool's text. */
function excerpt(text: string, lines = 4): string {
  const all = text.trimEnd().split('\n');
  const shown = all.slice(0, lines).join('\n    ');
  return all.length > lines
    ? `${shown}\n    … (${all.length - lines} more line${all.length - lines === 1 ? '' : 's'})`
    : shown;
}
