import { type Fact, factsOfType } from '../../events/facts.ts';
import { findDamage } from '../../events/find-damage.ts';
import type { ModelMessage } from '../../events/messages.ts';
import { planRecovery } from '../../events/plan-recovery.ts';
import type { Execution } from './crash-harness.ts';

/**
 * The invariants a log must keep after any kill, whether or not its run has ended, given the
 * side file's executions and the number of provider requests sent. Returns one
 * sentence per violation (empty: none), so a failure can be reported with its seed and log.
 * The crash scenario's call ids are unique within its one run, so calls are matched by id.
 */
export function crashViolations(
  facts: readonly Fact[],
  executions: readonly Execution[],
  requests: number,
): string[] {
  // seq gapless from 1, unique ids, one run.ended with nothing after it, no call started or
  // settled twice: the log's own rules, as findDamage reads them.
  const problems = findDamage(facts).map((damage) => `damaged log: ${damage.message}`);
  const ended = factsOfType(facts, 'run.ended');
  if (ended.length > 1) problems.push(`I7: ${ended.length} run.ended facts`);

  // I2, I8: each request follows its own durable step.started (a re-sent request is a new attempt).
  const attempts = factsOfType(facts, 'step.started').length;
  if (requests > attempts) {
    problems.push(`I2/I8: ${requests} provider requests but ${attempts} step.started facts`);
  }

  const started = factsOfType(facts, 'tool.started');
  const startedIds = new Set(started.map((fact) => fact.callId));
  const executionCounts = new Map<string, number>();
  for (const execution of executions) {
    executionCounts.set(execution.callId, (executionCounts.get(execution.callId) ?? 0) + 1);
    if (!startedIds.has(execution.callId)) {
      problems.push(
        `I2: ${execution.callId} executed (pid ${execution.pid}) without a durable tool.started`,
      );
    }
  }
  for (const [callId, count] of executionCounts) {
    if (count > 1) problems.push(`I5/I8: ${callId} executed ${count} times`);
  }

  // Once recovery ran, every call started before it is settled or marked indeterminate.
  for (const recovered of factsOfType(facts, 'run.recovered')) {
    for (const start of started.filter((fact) => fact.seq < recovered.seq)) {
      const accounted = facts.some(
        (fact) =>
          (fact.type === 'tool.settled' || fact.type === 'tool.indeterminate') &&
          fact.callId === start.callId &&
          fact.seq < recovered.seq,
      );
      if (!accounted) {
        problems.push(
          `I8: ${start.callId} started at seq ${start.seq} has neither tool.settled nor tool.indeterminate before run.recovered at seq ${recovered.seq}`,
        );
      }
    }
  }

  // A proven call with no tool.started provably never ran: nothing may have executed it.
  for (const run of planRecovery(facts).runs) {
    for (const call of run.neverStarted) {
      if (executionCounts.has(call.callId)) {
        problems.push(`I2: ${call.callId} has no tool.started but was executed`);
      }
    }
  }
  return problems;
}

/** Calls and results of a history that are not paired one to one (I6). */
export function historyViolations(history: readonly ModelMessage[]): string[] {
  const problems: string[] = [];
  const calls: string[] = [];
  const results = new Map<string, number>();
  for (const message of history) {
    if (message.role === 'assistant') {
      for (const part of message.content) if (part.type === 'tool-call') calls.push(part.callId);
    } else if (message.role === 'tool') {
      for (const part of message.content)
        results.set(part.callId, (results.get(part.callId) ?? 0) + 1);
    }
  }
  for (const callId of calls) {
    const count = results.get(callId) ?? 0;
    if (count !== 1) problems.push(`I6: history pairs call ${callId} with ${count} results`);
  }
  if (new Set(calls).size !== calls.length) problems.push('I6: history repeats a tool call id');
  for (const callId of results.keys()) {
    if (!calls.includes(callId))
      problems.push(`I6: history has a result for unknown call ${callId}`);
  }
  return problems;
}

/**
 * The invariants of a finished run: everything `crashViolations` checks, plus exactly one
 * `run.ended`, every started call settled (an indeterminate one as `unknown`, unless its own tool
 * answered for it: `tool.reconciled` other than `unknown`), every successful
 * call executed exactly once, and the final history pairing every call with one result.
 */
export function finalViolations(
  facts: readonly Fact[],
  executions: readonly Execution[],
  requests: number,
  history: readonly ModelMessage[] | undefined,
): string[] {
  const problems = crashViolations(facts, executions, requests);
  const ended = factsOfType(facts, 'run.ended');
  if (ended.length !== 1) problems.push(`I7: ${ended.length} run.ended facts, expected 1`);
  const settled = factsOfType(facts, 'tool.settled');
  for (const start of factsOfType(facts, 'tool.started')) {
    if (!settled.some((fact) => fact.callId === start.callId)) {
      problems.push(`I6: ${start.callId} started and never settled`);
    }
  }
  for (const marked of factsOfType(facts, 'tool.indeterminate')) {
    // Its own tool settled it (`reconcile` said done or not-done, or it is idempotent): I8 as restated.
    const checked = facts.some(
      (fact) =>
        fact.type === 'tool.reconciled' &&
        fact.callId === marked.callId &&
        fact.seq > marked.seq &&
        fact.answer !== 'unknown',
    );
    if (checked) continue;
    const outcome = settled.find((fact) => fact.callId === marked.callId)?.outcome;
    if (outcome !== 'unknown') {
      problems.push(`I8: indeterminate ${marked.callId} settled ${outcome}, expected unknown`);
    }
  }
  for (const fact of settled.filter((candidate) => candidate.outcome === 'success')) {
    const count = executions.filter((execution) => execution.callId === fact.callId).length;
    if (count !== 1) problems.push(`${fact.callId} settled success after ${count} executions`);
  }
  if (history === undefined) problems.push('the final child printed no history');
  else problems.push(...historyViolations(history));
  return problems;
}
