import type { Fact, PermissionDecision, ToolOutcome } from '../events/facts.ts';

/** What a replay compares of one run: its requests, its calls, its states and how it ended. */
export interface RunTrace {
  /** Each request sent (every attempt), in order. */
  requests: { stepId: string; inputHash: string; messageCount: number; tools: string[] }[];
  /** Each call of the run's steps, in order. */
  calls: CallTrace[];
  /** The states the run went through, a repeat of the state before left out. */
  states: string[];
  /** How it ended, or `unfinished`. */
  status: 'completed' | 'failed' | 'aborted' | 'unfinished';
  reason: string | undefined;
}

/** What happened to one call. */
export interface CallTrace {
  callId: string;
  name: string;
  /** A person was asked. */
  asked: boolean;
  /** The last decision, and by whom. */
  decision: { decision: PermissionDecision; by: 'user' | 'policy' } | undefined;
  executed: boolean;
  outcome: ToolOutcome | undefined;
}

/** One way the replayed run differs from the recorded one, in words. */
export interface ReplayDifference {
  /**
   * - `request`: the new code sent another request (another history, tools or options);
   * - `asked`: a person is asked where they were not, or the other way round;
   * - `decision`: a call is decided otherwise (a policy that now denies);
   * - `executed`: a call runs where it did not, or the other way round;
   * - `outcome`: a call settles otherwise (its input now invalid, say);
   * - `call`: a call exists on one side only;
   * - `states`: the run goes through other states;
   * - `status`: the run ends otherwise;
   * - `unanswered`: the new code sent more requests than the recording has responses for.
   */
  kind:
    | 'request'
    | 'asked'
    | 'decision'
    | 'executed'
    | 'outcome'
    | 'call'
    | 'states'
    | 'status'
    | 'unanswered';
  runId: string;
  callId?: string;
  /** The 0-based request, for `request` and `unanswered`. */
  request?: number;
  recorded: unknown;
  replayed: unknown;
  message: string;
}

/** The trace of one run's facts. */
export function runTrace(runFacts: readonly Fact[]): RunTrace {
  const trace: RunTrace = {
    requests: [],
    calls: [],
    states: [],
    status: 'unfinished',
    reason: undefined,
  };
  const calls = new Map<string, CallTrace>();
  for (const fact of runFacts) {
    if (fact.state !== undefined && trace.states.at(-1) !== fact.state)
      trace.states.push(fact.state);
    traceFact(fact, trace, calls);
  }
  trace.calls = [...calls.values()];
  return trace;
}

function traceFact(fact: Fact, trace: RunTrace, calls: Map<string, CallTrace>): void {
  const call = 'callId' in fact ? calls.get(fact.callId) : undefined;
  switch (fact.type) {
    case 'step.started': {
      const { inputHash, messageCount, tools } = fact.request;
      trace.requests.push({ stepId: fact.stepId, inputHash, messageCount, tools });
      return;
    }
    case 'step.completed':
      for (const { callId, name } of fact.toolCalls) {
        if (!calls.has(callId)) {
          calls.set(callId, {
            callId,
            name,
            asked: false,
            decision: undefined,
            executed: false,
            outcome: undefined,
          });
        }
      }
      return;
    case 'tool.permission.requested':
      if (call !== undefined) call.asked = true;
      return;
    case 'tool.permission.decided':
      if (call !== undefined) call.decision = { decision: fact.decision, by: fact.by };
      return;
    case 'tool.started':
      if (call !== undefined) call.executed = true;
      return;
    case 'tool.settled':
      if (call !== undefined && call.outcome === undefined) call.outcome = fact.outcome;
      return;
    case 'run.ended':
      trace.status = fact.status;
      trace.reason = fact.reason;
      return;
    default:
      return;
  }
}

/** The differences between a recorded run's trace and its replay's, the first request's first. */
export function compareTraces(
  runId: string,
  recorded: RunTrace,
  replayed: RunTrace,
): ReplayDifference[] {
  return [
    ...requestDifferences(runId, recorded, replayed),
    ...callDifferences(runId, recorded, replayed),
    ...stateDifferences(runId, recorded, replayed),
  ];
}

/** The first request that differs (every later one carries its history, so differs too). */
function requestDifferences(
  runId: string,
  recorded: RunTrace,
  replayed: RunTrace,
): ReplayDifference[] {
  const count = Math.min(recorded.requests.length, replayed.requests.length);
  for (let index = 0; index < count; index += 1) {
    const before = recorded.requests[index] as RunTrace['requests'][number];
    const now = replayed.requests[index] as RunTrace['requests'][number];
    if (before.inputHash === now.inputHash) continue;
    const what: string[] = [];
    if (before.messageCount !== now.messageCount) {
      what.push(`${before.messageCount} → ${now.messageCount} messages`);
    }
    if (before.tools.join() !== now.tools.join()) {
      what.push(`tools ${before.tools.join(', ') || 'none'} → ${now.tools.join(', ') || 'none'}`);
    }
    return [
      {
        kind: 'request',
        runId,
        request: index,
        recorded: before,
        replayed: now,
        message: `request ${index + 1} differs (${what.length > 0 ? what.join('; ') : 'the same messages and tools by count and name: a prompt, a schema, a message or an option changed'})${index + 1 < count ? '; every later request differs with it' : ''}`,
      },
    ];
  }
  return [];
}

function callDifferences(
  runId: string,
  recorded: RunTrace,
  replayed: RunTrace,
): ReplayDifference[] {
  const differences: ReplayDifference[] = [];
  const now = new Map(replayed.calls.map((call) => [call.callId, call]));
  for (const before of recorded.calls) {
    const after = now.get(before.callId);
    const name = `${before.name} ${before.callId}`;
    const add = (kind: ReplayDifference['kind'], from: unknown, to: unknown, message: string) =>
      differences.push({
        kind,
        runId,
        callId: before.callId,
        recorded: from,
        replayed: to,
        message,
      });
    if (after === undefined) {
      add('call', before, undefined, `call ${name}: made in the recording, not in the replay`);
      continue;
    }
    if (before.asked !== after.asked) {
      add(
        'asked',
        before.asked,
        after.asked,
        `call ${name}: ${after.asked ? 'now asks a person' : 'no longer asks a person'}`,
      );
    }
    const shown = (decision: CallTrace['decision']) =>
      decision === undefined ? 'undecided' : `${decision.decision} by ${decision.by}`;
    if (shown(before.decision) !== shown(after.decision)) {
      add(
        'decision',
        before.decision,
        after.decision,
        `call ${name}: ${shown(before.decision)} → ${shown(after.decision)}`,
      );
    }
    if (before.executed !== after.executed) {
      add(
        'executed',
        before.executed,
        after.executed,
        `call ${name}: ${after.executed ? 'now runs' : 'no longer runs'}`,
      );
    }
    if (before.outcome !== after.outcome) {
      add(
        'outcome',
        before.outcome,
        after.outcome,
        `call ${name}: settled ${before.outcome ?? 'not'} → ${after.outcome ?? 'not'}`,
      );
    }
  }
  return differences;
}

function stateDifferences(
  runId: string,
  recorded: RunTrace,
  replayed: RunTrace,
): ReplayDifference[] {
  const differences: ReplayDifference[] = [];
  if (recorded.states.join() !== replayed.states.join()) {
    const at = recorded.states.findIndex((state, index) => replayed.states[index] !== state);
    const index = at === -1 ? recorded.states.length : at;
    differences.push({
      kind: 'states',
      runId,
      recorded: recorded.states,
      replayed: replayed.states,
      message: `states differ from the ${ordinal(index + 1)}: ${recorded.states[index] ?? '(end)'} → ${replayed.states[index] ?? '(end)'}`,
    });
  }
  if (recorded.status !== replayed.status) {
    differences.push({
      kind: 'status',
      runId,
      recorded: { status: recorded.status, reason: recorded.reason },
      replayed: { status: replayed.status, reason: replayed.reason },
      message: `the run ends ${replayed.status}${replayed.reason === undefined ? '' : ` (${replayed.reason})`}, recorded ${recorded.status}${recorded.reason === undefined ? '' : ` (${recorded.reason})`}`,
    });
  }
  return differences;
}

function ordinal(n: number): string {
  return `${n}${n === 1 ? 'st' : n === 2 ? 'nd' : n === 3 ? 'rd' : 'th'}`;
}
