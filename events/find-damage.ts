import type { Fact } from './facts.ts';
import { collectRuns, type RunFacts, type StepFacts } from './run-facts.ts';

/** The kinds of damage a log can show. Each breaks a rule of architecture/invariants.md, "The rules of the log". */
export type DamageKind =
  /** `seq` skips numbers (or the session does not start at 1). */
  | 'seq-gap'
  /** `seq` repeats or goes backwards. */
  | 'seq-disorder'
  /** Two facts share an `id`. */
  | 'duplicate-fact-id'
  /** A run's first fact is not `run.started`. */
  | 'missing-run-started'
  | 'duplicate-run-started'
  /** I7: more than one `run.ended`. */
  | 'duplicate-run-ended'
  /** I7: a fact of the run after its `run.ended`. */
  | 'fact-after-run-ended'
  | 'duplicate-step-completed'
  /** One `step.completed` lists a `callId` twice. */
  | 'duplicate-call-id'
  /** A tool fact whose `callId` is not a call of the step completed last before it. */
  | 'tool-fact-without-call'
  /** I5: a call started more than once. */
  | 'duplicate-tool-started'
  /** I6: a call with more than one result. */
  | 'duplicate-tool-settled';

/** One precise finding about a damaged log. */
export interface LogDamage {
  kind: DamageKind;
  sessionId: string;
  /** `undefined` for damage of the session's sequence (`seq`, ids). */
  runId: string | undefined;
  stepId: string | undefined;
  callId: string | undefined;
  /** The `seq`s of the facts involved, in log order. */
  seqs: number[];
  /** What is wrong, naming the facts. */
  message: string;
}

/**
 * Finds everything in the facts that breaks the log's rules, finished runs included. Damage is
 * reported, never repaired: every projection keeps reading the first of duplicated facts.
 * Expects whole sessions (a session whose first `seq` is not 1 has a gap). Facts may come from
 * several sessions; `seq` is checked per session.
 */
export function findDamage(facts: readonly Fact[]): LogDamage[] {
  const damage: LogDamage[] = [...sequenceDamage(facts)];
  for (const run of collectRuns(facts)) damage.push(...runDamage(run));
  const sessionOrder = [...new Set(facts.map((fact) => fact.sessionId))];
  return damage
    .map((entry, index) => ({ entry, index }))
    .sort(
      (left, right) =>
        sessionOrder.indexOf(left.entry.sessionId) - sessionOrder.indexOf(right.entry.sessionId) ||
        (left.entry.seqs[0] ?? 0) - (right.entry.seqs[0] ?? 0) ||
        left.index - right.index,
    )
    .map(({ entry }) => entry);
}

function sequenceDamage(facts: readonly Fact[]): LogDamage[] {
  const damage: LogDamage[] = [];
  const lastSeq = new Map<string, number>();
  const factsById = new Map<string, Fact[]>();
  for (const fact of facts) {
    const { sessionId, seq } = fact;
    const previous = lastSeq.get(sessionId) ?? 0;
    if (seq <= previous) {
      damage.push(
        sessionFinding(
          'seq-disorder',
          sessionId,
          [previous, seq],
          `seq ${seq} (${fact.type}) comes after seq ${previous}`,
        ),
      );
    } else {
      if (seq > previous + 1) {
        const missing = seq === previous + 2 ? `${previous + 1}` : `${previous + 1}–${seq - 1}`;
        damage.push(
          sessionFinding(
            'seq-gap',
            sessionId,
            [previous, seq],
            `seq ${missing} missing before seq ${seq} (${fact.type})`,
          ),
        );
      }
      lastSeq.set(sessionId, seq);
    }
    const sameId = factsById.get(fact.id) ?? [];
    sameId.push(fact);
    factsById.set(fact.id, sameId);
  }
  for (const [id, sameId] of factsById) {
    const first = sameId[0];
    if (first === undefined || sameId.length < 2) continue;
    damage.push(
      sessionFinding(
        'duplicate-fact-id',
        first.sessionId,
        seqsOf(sameId),
        `fact id ${id} is used by ${count(sameId, 'facts')}`,
      ),
    );
  }
  return damage;
}

function runDamage(run: RunFacts): LogDamage[] {
  return [
    ...runStartDamage(run),
    ...runEndDamage(run),
    ...run.steps.flatMap((step) => stepDamage(run, step)),
    ...run.unmatched.map((fact) =>
      runFinding(
        run,
        'tool-fact-without-call',
        [fact],
        `run ${run.runId}: ${fact.type} at seq ${fact.seq} names call ${fact.callId}, which is not a call of the step completed last before it`,
        { callId: fact.callId },
      ),
    ),
  ];
}

/** A run that does not begin with `run.started`, or has more than one. */
function runStartDamage(run: RunFacts): LogDamage[] {
  const damage: LogDamage[] = [];
  const first = run.facts[0];
  if (first !== undefined && first.type !== 'run.started') {
    damage.push(
      runFinding(
        run,
        'missing-run-started',
        [first],
        `run ${run.runId} begins with ${first.type} at seq ${first.seq}, not run.started`,
      ),
    );
  }
  if (run.runStarted.length > 1) {
    damage.push(
      runFinding(
        run,
        'duplicate-run-started',
        run.runStarted,
        `run ${run.runId} has ${count(run.runStarted, 'run.started facts')}`,
      ),
    );
  }
  return damage;
}

/** I7: a second `run.ended`, and every other fact after the first. */
function runEndDamage(run: RunFacts): LogDamage[] {
  const ended = run.runEnded[0];
  if (ended === undefined) return [];
  const name = `run ${run.runId}`;
  const damage: LogDamage[] = [];
  if (run.runEnded.length > 1) {
    damage.push(
      runFinding(
        run,
        'duplicate-run-ended',
        run.runEnded,
        `${name} has ${count(run.runEnded, 'run.ended facts')}; I7 allows one`,
      ),
    );
  }
  for (const fact of run.facts.slice(run.facts.indexOf(ended) + 1)) {
    if (fact.type === 'run.ended') continue;
    damage.push(
      runFinding(
        run,
        'fact-after-run-ended',
        [fact],
        `${name}: ${fact.type} at seq ${fact.seq} follows its run.ended at seq ${ended.seq}`,
        { callId: 'callId' in fact ? fact.callId : undefined },
      ),
    );
  }
  return damage;
}

/**
 * The starts of a call after its first that no check allowed: I8 lets a call start again only
 * after a `tool.reconciled` (since its previous start) answered `not-done` or `idempotent`.
 */
function startsWithoutCheck(facts: RunFacts['facts']): RunFacts['facts'] {
  const unallowed: RunFacts['facts'] = [];
  let starts = 0;
  let allowed = false;
  for (const fact of facts) {
    if (fact.type === 'tool.reconciled') {
      allowed = fact.answer === 'not-done' || fact.answer === 'idempotent';
    }
    if (fact.type !== 'tool.started') continue;
    starts += 1;
    if (starts > 1 && !allowed) unallowed.push(fact);
    allowed = false;
  }
  return unallowed;
}

/** A step completed twice, a call listed twice, and (I5, I6) a call started or settled twice. */
function stepDamage(run: RunFacts, step: StepFacts): LogDamage[] {
  const stepName = `run ${run.runId} step ${step.stepId}`;
  const { stepId } = step;
  const damage: LogDamage[] = [];
  if (step.completions.length > 1) {
    damage.push(
      runFinding(
        run,
        'duplicate-step-completed',
        step.completions,
        `${stepName} has ${count(step.completions, 'step.completed facts')}`,
        { stepId },
      ),
    );
  }
  for (const call of step.duplicateCalls) {
    damage.push(
      runFinding(
        run,
        'duplicate-call-id',
        step.completions.slice(0, 1),
        `${stepName} lists call ${call.callId} more than once`,
        { stepId, callId: call.callId },
      ),
    );
  }
  for (const { call, started, settled, facts } of step.calls) {
    const where = { stepId, callId: call.callId };
    const callName = `${stepName} call ${call.callId}`;
    const unallowed = startsWithoutCheck(facts);
    if (unallowed.length > 0) {
      damage.push(
        runFinding(
          run,
          'duplicate-tool-started',
          started,
          `${callName} was started ${started.length} times (seq ${seqsOf(started).join(', ')}); I5 allows one`,
          where,
        ),
      );
    }
    if (settled.length > 1) {
      damage.push(
        runFinding(
          run,
          'duplicate-tool-settled',
          settled,
          `${callName} has ${count(settled, 'tool.settled facts')}; I6 allows one`,
          where,
        ),
      );
    }
  }
  return damage;
}

function runFinding(
  run: RunFacts,
  kind: DamageKind,
  facts: readonly Fact[],
  message: string,
  where: { stepId?: string; callId?: string } = {},
): LogDamage {
  return {
    kind,
    sessionId: run.sessionId,
    runId: run.runId,
    stepId: where.stepId,
    callId: where.callId,
    seqs: seqsOf(facts),
    message,
  };
}

function sessionFinding(
  kind: DamageKind,
  sessionId: string,
  seqs: number[],
  what: string,
): LogDamage {
  return {
    kind,
    sessionId,
    runId: undefined,
    stepId: undefined,
    callId: undefined,
    seqs,
    message: `session ${sessionId}: ${what}`,
  };
}

/** `count(facts, 'run.ended facts')` → "2 run.ended facts (seq 8, 9)" */
function count(facts: readonly Fact[], noun: string): string {
  return `${facts.length} ${noun} (seq ${seqsOf(facts).join(', ')})`;
}

function seqsOf(facts: readonly Fact[]): number[] {
  return facts.map((fact) => fact.seq);
}
