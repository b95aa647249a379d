import { type Fact, factsOfType } from '../../events/facts.ts';
import { projectHistory } from '../../events/project-history.ts';
import type { Execution } from './crash-harness.ts';
import { finalViolations } from './crash-invariants.ts';

/**
 * What the workers campaign checks in each session's log, beyond the single-process invariants
 * (`finalViolations`, reused per session): that the lease fenced every fact. The proof does not
 * come from the runtime: a trigger on the `leases` table (`leaseAuditSql`) records every grant
 * as the database commits it, with the session's `last_seq` at that moment, and the facts are
 * compared against that record.
 */

/** One grant of a run's lease, as the audit trigger recorded it. */
export interface LeaseGrant {
  sessionId: string;
  runId: string;
  workerId: string;
  epoch: number;
  /** The session's `last_seq` when the grant was made (every fact with seq ≤ this was committed before it). */
  lastSeq: number;
  /** Who held the row before (`undefined`: never leased, or released): a takeover when set. */
  previousWorkerId: string | undefined;
}

/** One `execute` start a worker recorded in its side file. */
export interface WorkerExecution extends Execution {
  sessionId: string;
  workerId: string;
}

/**
 * The audit: a table of grants and a trigger on `leases` that fills it whenever a row gets a
 * holder with a new epoch (an acquisition or a takeover), or a new holder under the same epoch
 * (which must never happen; recorded so the check can see it). In a trigger each statement sees
 * what was committed before it, and a grant's UPDATE of a lease row waits for every append that
 * holds that row FOR SHARE, so `last_seq` here bounds the facts of every earlier epoch.
 */
export function leaseAuditSql(schema: string): string[] {
  const s = `"${schema}"`;
  return [
    `CREATE TABLE ${s}.lease_grants (
      grant_id bigserial PRIMARY KEY,
      session_id text NOT NULL,
      run_id text NOT NULL,
      worker_id text NOT NULL,
      epoch integer NOT NULL,
      last_seq integer NOT NULL,
      previous_worker_id text,
      granted_at timestamptz NOT NULL DEFAULT clock_timestamp()
    )`,
    `CREATE FUNCTION ${s}.audit_lease_grant() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.worker_id IS NOT NULL AND (TG_OP = 'INSERT' OR NEW.epoch IS DISTINCT FROM OLD.epoch
          OR NEW.worker_id IS DISTINCT FROM OLD.worker_id) THEN
        INSERT INTO ${s}.lease_grants (session_id, run_id, worker_id, epoch, last_seq, previous_worker_id)
        VALUES (NEW.session_id, NEW.run_id, NEW.worker_id, NEW.epoch,
          coalesce((SELECT last_seq FROM ${s}.sessions WHERE session_id = NEW.session_id), 0),
          CASE WHEN TG_OP = 'UPDATE' THEN OLD.worker_id END);
      END IF;
      RETURN NEW;
    END $$`,
    `CREATE TRIGGER audit_lease_grant AFTER INSERT OR UPDATE ON ${s}.leases
      FOR EACH ROW EXECUTE FUNCTION ${s}.audit_lease_grant()`,
  ];
}

/**
 * The fencing checks of one session's log against the grants of its runs:
 * - every fact carries a lease token (`workerId` and `leaseEpoch`): a worker appends nothing
 *   outside a lease;
 * - that (run, worker, epoch) was granted, and each (run, epoch) was granted once;
 * - within a run, epochs never go down along `seq`;
 * - a fact of epoch e lies after epoch e's grant and not after epoch e+1's (by the session's
 *   `seq`, the order the database committed its facts in): no fact of a lost lease landed.
 */
export function leaseViolations(facts: readonly Fact[], grants: readonly LeaseGrant[]): string[] {
  const problems: string[] = [];
  const grantsOf = new Map<string, LeaseGrant[]>();
  for (const grant of grants) {
    const key = `${grant.runId}#${grant.epoch}`;
    const same = grantsOf.get(key) ?? [];
    same.push(grant);
    grantsOf.set(key, same);
    if (same.length === 2) {
      problems.push(
        `lease: run ${grant.runId} epoch ${grant.epoch} granted ${same.length} times (${same.map((g) => g.workerId).join(', ')})`,
      );
    }
  }
  const lastEpoch = new Map<string, { epoch: number; seq: number }>();
  for (const fact of facts) {
    const where = `seq ${fact.seq} ${fact.type} of run ${fact.runId}`;
    if (fact.workerId === undefined || fact.leaseEpoch === undefined) {
      problems.push(`lease: ${where} carries no lease token (workerId/leaseEpoch)`);
      continue;
    }
    const epoch = fact.leaseEpoch;
    const granted = grantsOf.get(`${fact.runId}#${epoch}`)?.[0];
    if (granted === undefined || granted.workerId !== fact.workerId) {
      problems.push(
        `lease: ${where} by ${fact.workerId} under epoch ${epoch}, which was ${granted === undefined ? 'never granted' : `granted to ${granted.workerId}`}`,
      );
    } else if (fact.seq <= granted.lastSeq) {
      problems.push(
        `lease: ${where} under epoch ${epoch} lies before that epoch's grant (session at seq ${granted.lastSeq})`,
      );
    }
    const next = grantsOf.get(`${fact.runId}#${epoch + 1}`)?.[0];
    if (next !== undefined && fact.seq > next.lastSeq) {
      problems.push(
        `lease: ${where} by ${fact.workerId} under epoch ${epoch} landed after epoch ${epoch + 1} was granted to ${next.workerId} (session at seq ${next.lastSeq})`,
      );
    }
    const previous = lastEpoch.get(fact.runId);
    if (previous !== undefined && epoch < previous.epoch) {
      problems.push(
        `lease: ${where} has epoch ${epoch}, after seq ${previous.seq} had epoch ${previous.epoch}`,
      );
    }
    lastEpoch.set(fact.runId, { epoch, seq: fact.seq });
  }
  return problems;
}

/**
 * A call is executed by the worker that recorded its `tool.started` (under its lease): a worker
 * that lost the lease, or never had it, starts no tool.
 */
export function executorViolations(
  facts: readonly Fact[],
  executions: readonly WorkerExecution[],
): string[] {
  const problems: string[] = [];
  for (const execution of executions) {
    // A call run again (after `reconcile` said not-done, or an idempotent one) has one start per run.
    const starts = factsOfType(facts, 'tool.started').filter(
      (fact) => fact.callId === execution.callId,
    );
    const started = starts[0];
    if (started === undefined) continue; // crashViolations names it (I2)
    if (!starts.some((start) => start.workerId === execution.workerId)) {
      problems.push(
        `lease: ${execution.callId} executed by ${execution.workerId} (pid ${execution.pid}), but its tool.started (seq ${started.seq}) was appended by ${started.workerId ?? 'no worker'}`,
      );
    }
  }
  return problems;
}

/**
 * Everything the campaign requires of one session's log once its run ended: the single-process
 * final invariants (one run.ended, completed; every call paired with one result, I6; every
 * indeterminate call settled unknown; no call executed twice; every execution after a durable
 * tool.started; requests ≤ attempts), the fencing checks and the executor check.
 */
export function workersFinalViolations(options: {
  facts: readonly Fact[];
  executions: readonly WorkerExecution[];
  requests: number;
  grants: readonly LeaseGrant[];
}): string[] {
  const { facts, executions, requests, grants } = options;
  const history = projectHistory(facts, { provider: 'scripted' });
  const problems = finalViolations(facts, executions, requests, history);
  const [ended] = factsOfType(facts, 'run.ended');
  if (ended !== undefined && ended.status !== 'completed') {
    problems.push(`the run ended ${ended.status}/${ended.reason}, expected completed`);
  }
  problems.push(...leaseViolations(facts, grants), ...executorViolations(facts, executions));
  return problems;
}
