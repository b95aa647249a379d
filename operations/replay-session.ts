import type { Fact, FactOf, NewFact, PermissionDecision } from '../events/facts.ts';
import { sequentialIds } from '../events/ids.ts';
import { recordedStateHasTag } from '../machines/pure/state-tags.ts';
import { createRuntime, type Runtime, type RuntimeOptions, toAdapter } from '../runtime.ts';
import { memoryStore } from '../store/memory/memory-store.ts';
import type { RuntimeTools } from '../tools/provider-tool.ts';
import { RecordedModel } from './recorded-model.ts';
import { recordedTools } from './recorded-tools.ts';
import { compareTraces, type ReplayDifference, type RunTrace, runTrace } from './run-trace.ts';

export type { CallTrace, ReplayDifference, RunTrace } from './run-trace.ts';

/** What `replaySession` replays, and with what. */
export interface ReplaySessionOptions {
  /** The session's recorded facts (`store.read(sessionId)`, or a log file's). */
  facts: readonly Fact[];
  /**
   * The current code: the options the application gives `createRuntime` (its model for the
   * requests' description and identity, its tools, policy, system prompt and limits). Its `store`,
   * clock and ids are not used: the replay runs on a memory store of its own.
   */
  runtime: RuntimeOptions;
  /** The runs to replay (default: every run of the session, in order). */
  runIds?: readonly string[];
}

/** One recorded run and its replay. */
export interface ReplayedRun {
  runId: string;
  recorded: RunTrace;
  replayed: RunTrace;
  differences: ReplayDifference[];
}

/** What `replaySession` found: per run, and every difference together. */
export interface ReplayReport {
  sessionId: string;
  runs: ReplayedRun[];
  /** Every run's differences, in run order; empty when the new code does what the old one did. */
  differences: ReplayDifference[];
}

/**
 * Replays a recorded session through the current code as a test, with no provider and no side
 * effect: each run's recorded model responses (its `step.completed` facts) are played back as the
 * model, every tool's `execute` returns its recorded result, and a person's recorded decisions are
 * given again when the new code asks for them. The current tools' schemas, permissions and policy,
 * the system prompt and the turn machine decide as they would now. The report is the difference:
 * the first request the new code would send otherwise, calls asked, decided, run or settled
 * otherwise, other states, another end. Limits: architecture/operations.md, "Replay".
 *
 * @example
 * const report = await replaySession({ facts: await store.read('s-42'), runtime: myRuntimeOptions });
 * expect(report.differences).toEqual([]);
 */
export async function replaySession(options: ReplaySessionOptions): Promise<ReplayReport> {
  const { facts } = options;
  const starts = facts.filter(
    (fact): fact is FactOf<'run.started'> =>
      fact.type === 'run.started' &&
      (options.runIds === undefined || options.runIds.includes(fact.runId)),
  );
  const runs: ReplayedRun[] = [];
  for (const started of starts) runs.push(await replayRun(facts, started, options.runtime));
  return {
    sessionId: facts[0]?.sessionId ?? '',
    runs,
    differences: runs.flatMap((run) => run.differences),
  };
}

/** Replays one run on a memory store holding the session's facts before it. */
async function replayRun(
  facts: readonly Fact[],
  started: FactOf<'run.started'>,
  options: RuntimeOptions,
): Promise<ReplayedRun> {
  const { sessionId, runId } = started;
  const recordedFacts = facts.filter((fact) => fact.runId === runId);
  const store = memoryStore();
  const before = facts.filter((fact) => fact.seq < started.seq).map(asNewFact);
  if (before.length > 0) await store.append(sessionId, before);
  let clock = Date.parse(started.at);
  const now = () => (clock += 1);
  const model = new RecordedModel(toAdapter(options.model, now), recordedFacts);
  const tools = typeof options.tools === 'function' ? options.tools() : (options.tools ?? {});
  const replaced = recordedTools(tools as RuntimeTools, recordedFacts);
  const runtime = createRuntime({
    ...options,
    model,
    tools: replaced.tools,
    store,
    now,
    generateId: sequentialIds(),
    random: () => 0.5,
    telemetry: false,
  });
  try {
    const replayedRunId = await driveRun(runtime, started, recordedFacts);
    const replayedFacts = (await store.read(sessionId)).filter(
      (fact) => fact.runId === replayedRunId,
    );
    const recorded = runTrace(recordedFacts);
    const replayed = runTrace(replayedFacts);
    const differences = compareTraces(runId, recorded, replayed);
    for (const { index, request } of model.unanswered) {
      differences.push({
        kind: 'unanswered',
        runId,
        request: index,
        recorded: undefined,
        replayed: request,
        message: `request ${index + 1}: the new code sends a request the recording has no response for`,
      });
    }
    return { runId, recorded, replayed, differences };
  } finally {
    await runtime.close();
  }
}

/**
 * Sends the run's input and answers what the new code asks a person with the recorded decision
 * (for a call nobody was asked about: `allow` when the recording ran it, else `deny`). Resolves
 * with the replayed run's id once it ends, or parks where the recording has no answer (the
 * recorded run was waiting there too).
 */
async function driveRun(
  runtime: Runtime,
  started: FactOf<'run.started'>,
  recordedFacts: readonly Fact[],
): Promise<string> {
  const { sessionId } = started;
  const turn = await runtime.send({ sessionId, text: started.input.text });
  for await (const event of turn.events) {
    if (!('seq' in event) || !recordedStateHasTag(event.state, 'needsPerson')) continue;
    if (!(await answerPending(runtime, sessionId, recordedFacts))) break;
  }
  return turn.runId;
}

/** Answers every pending decision from the recording; `false` when one has no recorded answer. */
async function answerPending(
  runtime: Runtime,
  sessionId: string,
  recordedFacts: readonly Fact[],
): Promise<boolean> {
  const pending = await runtime.pending(sessionId);
  for (const { callId } of pending) {
    const decision = recordedDecision(recordedFacts, callId);
    if (decision === undefined) return false;
    await runtime.decide({ sessionId, callId, decision, reason: 'replay: the recorded decision' });
  }
  return true;
}

/**
 * The person's recorded decision for a call; for a call the recording never asked a person
 * about, the decision its outcome implies (it ran: `allow`; it did not: `deny`); `undefined` when
 * the recording asked and nobody had answered yet.
 */
function recordedDecision(
  recordedFacts: readonly Fact[],
  callId: string,
): PermissionDecision | undefined {
  const byUser = recordedFacts.findLast(
    (fact) =>
      fact.type === 'tool.permission.decided' && fact.callId === callId && fact.by === 'user',
  );
  if (byUser?.type === 'tool.permission.decided') return byUser.decision;
  const asked = recordedFacts.some(
    (fact) => fact.type === 'tool.permission.requested' && fact.callId === callId,
  );
  if (asked) return undefined;
  const ran = recordedFacts.some((fact) => fact.type === 'tool.started' && fact.callId === callId);
  return ran ? 'allow' : 'deny';
}

/** A stored fact as an append takes it: without its `seq` and the worker that wrote it. */
function asNewFact(fact: Fact): NewFact {
  const { seq: _seq, workerId: _worker, leaseEpoch: _epoch, ...rest } = fact;
  return rest as NewFact;
}
