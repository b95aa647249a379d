import {
  assertNever,
  type Fact,
  type FactOf,
  type PermissionDecision,
  type ToolCallRecord,
} from './facts.ts';
import { hashJson, type JsonValue } from './json.ts';

/**
 * The shared index the projections read a log through: facts grouped by run, steps by
 * `stepId`, and every tool fact attached to the call it belongs to. Building it judges
 * nothing; duplicates and facts that match no call are kept so `planRecovery` can report them.
 */

/** The tool facts that concern one call, as they appear in the log. */
export type ToolFact = FactOf<
  | 'tool.permission.requested'
  | 'tool.permission.decided'
  | 'tool.started'
  | 'tool.settled'
  | 'tool.indeterminate'
  | 'tool.reconciled'
>;

/** One call of a completed step and every tool fact about it, in log order. */
export interface CallFacts {
  call: ToolCallRecord;
  stepId: string;
  facts: ToolFact[];
  started: FactOf<'tool.started'>[];
  /** Every `tool.settled` for the call; the first one is the result, more are damage. */
  settled: FactOf<'tool.settled'>[];
}

/** One step (all its attempts) of a run. */
export interface StepFacts {
  stepId: string;
  /** `step.started` of every attempt, in log order. */
  attempts: FactOf<'step.started'>[];
  failures: FactOf<'step.failed'>[];
  retries: FactOf<'retry.due'>[];
  /** Every `step.completed`; the first one is the step's result, more are damage. */
  completions: FactOf<'step.completed'>[];
  /** The attempt that produced the first completion (the last attempt started before it). */
  completedAttempt: FactOf<'step.started'> | undefined;
  /** The calls of the first completion, in the model's order (a repeated `callId` keeps the first). */
  calls: CallFacts[];
  /** The other records of a `callId` that appeared twice in one completion. */
  duplicateCalls: ToolCallRecord[];
}

/** Everything one run wrote, grouped. */
export interface RunFacts {
  sessionId: string;
  turnId: string;
  runId: string;
  facts: Fact[];
  runStarted: FactOf<'run.started'>[];
  runEnded: FactOf<'run.ended'>[];
  steps: StepFacts[];
  steering: FactOf<'steering.received'>[];
  /** Tool facts that match no call of the step that was completed last when they were written. */
  unmatched: ToolFact[];
  /** The `state` of the last fact of the run that recorded one. */
  lastState: string | undefined;
}

/** A decision a person still has to give. */
export interface PendingDecision {
  kind: 'permission' | 'indeterminate';
  callId: string;
  name: string;
  input: JsonValue;
  inputHash: string;
  /**
   * An indeterminate call whose tool was asked after the restart (`reconcile`) and could not
   * tell: its answer, and what it said (or what went wrong asking it). Absent otherwise.
   */
  reconciled?: { answer: 'unknown'; reason: string | undefined };
}

/**
 * Which decisions a person may give for a pending call: a permission request takes `allow`,
 * `deny` or `abort`; an indeterminate call (it started and may have run, so it never runs
 * again) takes `report-unknown` or `abort`. The one rule the machine's `userDecision` guard and
 * `validateDecision` both apply.
 */
export function decisionFits(kind: PendingDecision['kind'], decision: PermissionDecision): boolean {
  if (decision === 'abort') return true;
  return kind === 'permission'
    ? decision === 'allow' || decision === 'deny'
    : decision === 'report-unknown';
}

/** Where `RunIndex.add` put a fact: its run, and its step and call when it has them. */
export interface IndexedFact {
  run: RunFacts;
  step: StepFacts | undefined;
  /** The call a tool fact belongs to (`undefined` for an unmatched tool fact). */
  call: CallFacts | undefined;
}

/**
 * The shared index built one fact at a time, so a projection can follow a growing log without
 * reading it again: `add` files each fact and says where it went.
 */
export class RunIndex {
  readonly #runs = new Map<string, RunFacts>();
  readonly #steps = new Map<RunFacts, Map<string, StepFacts>>();
  readonly #lastCompleted = new Map<RunFacts, StepFacts>();
  // A log holds long stretches of one run: the run of the previous fact is looked up first.
  #current: { run: RunFacts; steps: Map<string, StepFacts> } | undefined;

  /** Files the next fact of the log (log order). */
  add(fact: Fact): IndexedFact {
    const { run, steps } = this.#runOf(fact);
    run.facts.push(fact);
    if (fact.state !== undefined) run.lastState = fact.state;
    const filed: IndexedFact = { run, step: undefined, call: undefined };

    switch (fact.type) {
      case 'run.started':
        run.runStarted.push(fact);
        break;
      case 'run.ended':
        run.runEnded.push(fact);
        break;
      case 'steering.received':
        run.steering.push(fact);
        break;
      case 'step.started':
        filed.step = stepOf(run, steps, fact.stepId);
        filed.step.attempts.push(fact);
        break;
      case 'step.failed':
        filed.step = stepOf(run, steps, fact.stepId);
        filed.step.failures.push(fact);
        break;
      case 'retry.due':
        filed.step = stepOf(run, steps, fact.stepId);
        filed.step.retries.push(fact);
        break;
      case 'step.completed':
        filed.step = this.#fileCompletion(run, stepOf(run, steps, fact.stepId), fact);
        break;
      case 'tool.permission.requested':
      case 'tool.permission.decided':
      case 'tool.started':
      case 'tool.settled':
      case 'tool.indeterminate':
      case 'tool.reconciled':
        this.#fileToolFact(run, fact, filed);
        break;
      case 'compaction.started':
      case 'compaction.completed':
      case 'compaction.failed':
      case 'run.stop.requested':
      case 'run.recovered':
        break;
      default:
        assertNever(fact, 'fact');
    }
    return filed;
  }

  /** The runs so far, in order of each run's first fact. */
  runs(): RunFacts[] {
    return [...this.#runs.values()];
  }

  #runOf(fact: Fact): { run: RunFacts; steps: Map<string, StepFacts> } {
    const current = this.#current;
    if (current?.run.runId === fact.runId && current.run.sessionId === fact.sessionId) {
      return current;
    }
    const key = `${fact.sessionId}\u0000${fact.runId}`;
    let run = this.#runs.get(key);
    if (run === undefined) {
      run = emptyRun(fact);
      this.#runs.set(key, run);
      this.#steps.set(run, new Map());
    }
    this.#current = { run, steps: this.#steps.get(run) ?? new Map<string, StepFacts>() };
    return this.#current;
  }

  /** The first completion of a step gives it its calls; any later one is kept as damage. */
  #fileCompletion(run: RunFacts, step: StepFacts, fact: FactOf<'step.completed'>): StepFacts {
    step.completions.push(fact);
    if (step.completions.length === 1) {
      step.completedAttempt = step.attempts.at(-1);
      indexCalls(step, fact.toolCalls);
    }
    this.#lastCompleted.set(run, step);
    return step;
  }

  /** A tool fact goes to its call in the run's last completed step, or to `unmatched`. */
  #fileToolFact(run: RunFacts, fact: ToolFact, filed: IndexedFact): void {
    const step = this.#lastCompleted.get(run);
    const call = step?.calls.find((entry) => entry.call.callId === fact.callId);
    if (call === undefined) {
      run.unmatched.push(fact);
      return;
    }
    call.facts.push(fact);
    if (fact.type === 'tool.started') call.started.push(fact);
    if (fact.type === 'tool.settled') call.settled.push(fact);
    filed.step = step;
    filed.call = call;
  }
}

/** An empty `RunIndex` (see `collectRuns` for the rules it files facts by). */
export function createRunIndex(): RunIndex {
  return new RunIndex();
}

/**
 * Groups facts by run (in order of each run's first fact) and indexes their steps and calls.
 * A tool fact belongs to the run's most recently completed step: providers may reuse a
 * `callId` across steps, so a call is paired with its facts by step, never by `callId` alone.
 */
export function collectRuns(facts: readonly Fact[]): RunFacts[] {
  const index = createRunIndex();
  for (const fact of facts) index.add(fact);
  return index.runs();
}

/**
 * The decisions a person still owes for a run: calls asked for and not yet decided, and calls
 * marked `tool.indeterminate` and not yet resolved. An ended run owes none.
 */
export function pendingDecisions(run: RunFacts): PendingDecision[] {
  if (run.runEnded.length > 0) return [];
  const pending: PendingDecision[] = [];
  for (const step of run.steps) {
    for (const call of step.calls) {
      const decision = pendingDecisionOf(call);
      if (decision !== undefined) pending.push(decision);
    }
  }
  return pending;
}

function pendingDecisionOf(call: CallFacts): PendingDecision | undefined {
  let asked: FactOf<'tool.permission.requested'> | undefined;
  let indeterminate = false;
  let reconciled: PendingDecision['reconciled'];
  for (const fact of call.facts) {
    if (fact.type === 'tool.permission.requested') asked = fact;
    // A call its tool checks (`check`) waits for that answer, not for a person.
    if (fact.type === 'tool.indeterminate') indeterminate = fact.check === undefined;
    if (fact.type === 'tool.reconciled') {
      indeterminate = fact.answer === 'unknown';
      reconciled = indeterminate ? { answer: 'unknown', reason: fact.reason } : undefined;
    }
    if (
      fact.type === 'tool.permission.decided' ||
      fact.type === 'tool.settled' ||
      fact.type === 'tool.started'
    ) {
      asked = undefined;
      indeterminate = false;
      reconciled = undefined;
    }
  }
  const { callId, name } = call.call;
  if (indeterminate) {
    const started = call.started.at(-1);
    const input = started?.input ?? call.call.input;
    const hash = inputHashOf(call, input);
    return {
      kind: 'indeterminate',
      callId,
      name,
      input,
      inputHash: hash,
      ...(reconciled && { reconciled }),
    };
  }
  if (asked !== undefined) {
    return { kind: 'permission', callId, name, input: asked.input, inputHash: asked.inputHash };
  }
  return undefined;
}

/** The hash the call's execution was bound to, from the latest fact that recorded one. */
function inputHashOf(call: CallFacts, input: JsonValue): string {
  for (let index = call.facts.length - 1; index >= 0; index -= 1) {
    const fact = call.facts[index];
    if (fact !== undefined && 'inputHash' in fact) return fact.inputHash;
  }
  return hashJson(input);
}

function emptyRun(fact: Fact): RunFacts {
  return {
    sessionId: fact.sessionId,
    turnId: fact.turnId,
    runId: fact.runId,
    facts: [],
    runStarted: [],
    runEnded: [],
    steps: [],
    steering: [],
    unmatched: [],
    lastState: undefined,
  };
}

function stepOf(run: RunFacts, runSteps: Map<string, StepFacts>, stepId: string): StepFacts {
  let step = runSteps.get(stepId);
  if (step === undefined) {
    step = {
      stepId,
      attempts: [],
      failures: [],
      retries: [],
      completions: [],
      completedAttempt: undefined,
      calls: [],
      duplicateCalls: [],
    };
    runSteps.set(stepId, step);
    run.steps.push(step);
  }
  return step;
}

function indexCalls(step: StepFacts, toolCalls: readonly ToolCallRecord[]): void {
  for (const call of toolCalls) {
    if (step.calls.some((entry) => entry.call.callId === call.callId)) {
      step.duplicateCalls.push(call);
      continue;
    }
    step.calls.push({ call, stepId: step.stepId, facts: [], started: [], settled: [] });
  }
}
