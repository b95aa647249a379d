import type { Fact } from './facts.ts';
import { collectRuns, type RunFacts } from './run-facts.ts';

/** The kinds of damage a log can show. Each breaks a rule of DESIGN.md "The log". */
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
  const seqsById = new Map<string, Fact[]>();
  for (const fact of facts) {
    const { sessionId, seq } = fact;
    const previous = lastSeq.get(sessionId) ?? 0;
    if (seq <= previous) {
      damage.push(
        finding('seq-disorder', fact, {
          runId: undefined,
          seqs: [previous, seq],
          message: `session ${sessionId}: seq ${seq} (${fact.type}) comes after seq ${previous}`,
        }),
      );
    } else {
      if (seq > previous + 1) {
        const missing = seq === previous + 2 ? `${previous + 1}` : `${previous + 1}–${seq - 1}`;
        damage.push(
          finding('seq-gap', fact, {
            runId: undefined,
            seqs: [previous, seq],
            message: `session ${sessionId}: seq ${missing} missing before seq ${seq} (${fact.type})`,
          }),
        );
      }
      lastSeq.set(sessionId, seq);
    }
    const sameId = seqsById.get(fact.id) ?? [];
    sameId.push(fact);
    seqsById.set(fact.id, sameId);
  }
  for (const [id, sameId] of seqsById) {
    const first = sameId[0];
    if (first === undefined || sameId.length < 2) continue;
    damage.push(
      finding('duplicate-fact-id', first, {
        runId: undefined,
        seqs: sameId.map((fact) => fact.seq),
        message: `fact id ${id} is used by ${sameId.length} facts (seq ${seqList(sameId)})`,
      }),
    );
  }
  return damage;
}

function runDamage(run: RunFacts): LogDamage[] {
  const damage: LogDamage[] = [];
  const first = run.facts[0];
  const name = `run ${run.runId}`;
  if (first !== undefined && first.type !== 'run.started') {
    damage.push(
      finding('missing-run-started', first, {
        message: `${name} begins with ${first.type} at seq ${first.seq}, not run.started`,
      }),
    );
  }
  if (run.runStarted.length > 1) {
    damage.push(
      finding('duplicate-run-started', run.runStarted[1] ?? first, {
        seqs: run.runStarted.map((fact) => fact.seq),
        message: `${name} has ${run.runStarted.length} run.started facts (seq ${seqList(run.runStarted)})`,
      }),
    );
  }
  const ended = run.runEnded[0];
  if (ended !== undefined) {
    if (run.runEnded.length > 1) {
      damage.push(
        finding('duplicate-run-ended', ended, {
          seqs: run.runEnded.map((fact) => fact.seq),
          message: `${name} has ${run.runEnded.length} run.ended facts (seq ${seqList(run.runEnded)}); I7 allows one`,
        }),
      );
    }
    for (const fact of run.facts.slice(run.facts.indexOf(ended) + 1)) {
      if (fact.type === 'run.ended') continue;
      damage.push(
        finding('fact-after-run-ended', fact, {
          message: `${name}: ${fact.type} at seq ${fact.seq} follows its run.ended at seq ${ended.seq}`,
        }),
      );
    }
  }
  for (const step of run.steps) {
    const stepName = `${name} step ${step.stepId}`;
    if (step.completions.length > 1) {
      damage.push(
        finding('duplicate-step-completed', step.completions[0] ?? run.facts[0], {
          stepId: step.stepId,
          seqs: step.completions.map((fact) => fact.seq),
          message: `${stepName} has ${step.completions.length} step.completed facts (seq ${seqList(step.completions)})`,
        }),
      );
    }
    for (const call of step.duplicateCalls) {
      damage.push(
        finding('duplicate-call-id', step.completions[0] ?? run.facts[0], {
          stepId: step.stepId,
          callId: call.callId,
          message: `${stepName} lists call ${call.callId} more than once`,
        }),
      );
    }
    for (const call of step.calls) {
      const callName = `${stepName} call ${call.call.callId}`;
      if (call.started.length > 1) {
        damage.push(
          finding('duplicate-tool-started', call.started[0], {
            stepId: step.stepId,
            seqs: call.started.map((fact) => fact.seq),
            message: `${callName} was started ${call.started.length} times (seq ${seqList(call.started)}); I5 allows one`,
          }),
        );
      }
      if (call.settled.length > 1) {
        damage.push(
          finding('duplicate-tool-settled', call.settled[0], {
            stepId: step.stepId,
            seqs: call.settled.map((fact) => fact.seq),
            message: `${callName} has ${call.settled.length} tool.settled facts (seq ${seqList(call.settled)}); I6 allows one`,
          }),
        );
      }
    }
  }
  for (const fact of run.unmatched) {
    damage.push(
      finding('tool-fact-without-call', fact, {
        message: `${name}: ${fact.type} at seq ${fact.seq} names call ${fact.callId}, which is not a call of the step completed last before it`,
      }),
    );
  }
  return damage;
}

function finding(
  kind: DamageKind,
  fact: Fact | undefined,
  details: Partial<Omit<LogDamage, 'kind' | 'message'>> & { message: string },
): LogDamage {
  return {
    kind,
    sessionId: fact?.sessionId ?? '',
    runId: 'runId' in details ? details.runId : fact?.runId,
    stepId: details.stepId,
    callId: details.callId ?? (fact !== undefined && 'callId' in fact ? fact.callId : undefined),
    seqs: details.seqs ?? (fact === undefined ? [] : [fact.seq]),
    message: details.message,
  };
}

function seqList(facts: readonly Fact[]): string {
  return facts.map((fact) => fact.seq).join(', ');
}
