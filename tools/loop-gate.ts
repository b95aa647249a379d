import type { Fact, ToolOutcome } from '../events/facts.ts';
import { hashJson } from '../events/json.ts';

/** How many identical failures in a row close the gate for the next identical call. */
export const loopGateFailures = 2;

/** One earlier settled call of a tool, with the hash of the input it was judged on. */
interface SettledCall {
  outcome: ToolOutcome;
  inputHash: string;
}

/**
 * The loop gate: true when the two most recent settled calls of tool `name` in run `runId`
 * (log order) both had exactly `inputHash` and both failed (`error` or `invalid`), so a third
 * identical call is refused without running. The gate's own refusals are skipped, so the
 * identical call stays refused until a different call of the tool settles.
 *
 * A settled call's hash is the validated input's (`tool.started`, else the permission facts);
 * an `invalid` call never had a validated input, so its hash is the raw input's.
 */
export function isRepeatedFailure({
  facts,
  runId,
  name,
  inputHash,
}: {
  facts: readonly Fact[];
  runId: string;
  name: string;
  inputHash: string;
}): boolean {
  const recent = settledCalls(facts, runId, name).slice(-loopGateFailures);
  return (
    recent.length === loopGateFailures &&
    recent.every(
      (call) =>
        call.inputHash === inputHash && (call.outcome === 'error' || call.outcome === 'invalid'),
    )
  );
}

function settledCalls(facts: readonly Fact[], runId: string, name: string): SettledCall[] {
  const settled: SettledCall[] = [];
  // Tool facts refer to the call ids of the latest step.completed: a step's calls all settle
  // before the next request (I6), and call ids repeat across steps.
  let rawHashes = new Map<string, string>();
  let validatedHashes = new Map<string, string>();
  let startedHashes = new Map<string, string>();
  for (const fact of facts) {
    if (fact.runId !== runId) continue;
    if (fact.type === 'step.completed') {
      rawHashes = new Map(fact.toolCalls.map((call) => [call.callId, hashJson(call.input)]));
      validatedHashes = new Map();
      startedHashes = new Map();
    } else if (
      fact.type === 'tool.permission.requested' ||
      fact.type === 'tool.permission.decided'
    ) {
      validatedHashes.set(fact.callId, fact.inputHash);
    } else if (fact.type === 'tool.started') {
      startedHashes.set(fact.callId, fact.inputHash);
    } else if (fact.type === 'tool.settled' && fact.name === name) {
      const validatedHash = startedHashes.get(fact.callId) ?? validatedHashes.get(fact.callId);
      // The gate's own refusal (denied before any permission fact) must not end the streak it
      // enforces, or every third identical failing call would run again.
      if (fact.outcome === 'denied' && validatedHash === undefined) continue;
      const rawHash = rawHashes.get(fact.callId) ?? '';
      const inputHash = fact.outcome === 'invalid' ? rawHash : (validatedHash ?? rawHash);
      settled.push({ outcome: fact.outcome, inputHash });
    }
  }
  return settled;
}
