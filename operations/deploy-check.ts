import type { FactOf } from '../events/facts.ts';
import {
  compareFingerprints,
  type FingerprintDifference,
  type RunFingerprint,
  recordedFingerprint,
} from '../events/run-fingerprint.ts';
import { resumeRun } from '../machines/pure/resume-run.ts';
import { turnMachine } from '../machines/pure/turn-machine.ts';
import type { EventStore, OpenRun } from '../store/event-store.ts';

/** Why this code cannot continue an unfinished run. */
export type DeployBlocker = {
  message: string;
} /** A call that is still to run names a tool this runtime does not have. */ & (
  | { kind: 'tool-missing'; callId: string; name: string }
  /** A call that is still to run was made against another input schema than the tool's now. */
  | { kind: 'tool-schema-changed'; callId: string; name: string; recorded: string; current: string }
  /** This turn machine cannot rebuild the run (a newer machine's run, a state it lacks, damage). */
  | { kind: 'cannot-replay' }
  /** The store cannot read the session. */
  | { kind: 'unreadable' }
);

/** One unfinished run this code cannot continue. */
export interface BlockedRun {
  sessionId: string | undefined;
  runId: string | undefined;
  /** The state the run's last fact recorded. */
  state: string | undefined;
  blockers: DeployBlocker[];
  /** Everything that differs from what the run was started with (`compareFingerprints`). */
  differences: FingerprintDifference[];
}

/** What `checkDeploy` found. */
export interface DeployCheckReport {
  /** Unfinished runs looked at. */
  checked: number;
  /** The runs this code cannot continue, each with why; empty when the deploy is safe for them. */
  blocked: BlockedRun[];
  /**
   * Among the runs it can continue: how many differ from what they were started with, by kind
   * (`model-changed`, `tool-added`, …): they continue, under other conditions.
   */
  differences: Partial<Record<FingerprintDifference['kind'], number>>;
}

/** What `checkDeploy` compares. */
export interface DeployCheckOptions {
  store: EventStore;
  /** What this code would run with: `runtime.fingerprint()` of the new runtime. */
  fingerprint: RunFingerprint;
  /** Called after each run, for progress. */
  onProgress?: (checked: number, total: number) => void;
  /** Stops early; the report covers the runs checked so far. */
  signal?: AbortSignal;
}

/**
 * The deploy check: every unfinished run of the store is rebuilt as `recover()` would rebuild it
 * (`resumeRun`, with this code's turn machine) and its recorded fingerprint compared with this
 * runtime's. A run is named when this code cannot continue it: a call still to run of a tool that
 * is gone or whose input schema changed, a run the machine cannot replay, or a session the store
 * cannot read. Nothing is written and no tool or model is called.
 *
 * @example
 * const report = await checkDeploy({ store, fingerprint: newRuntime.fingerprint() });
 * if (report.blocked.length > 0) process.exitCode = 1; // in CI, before the deploy
 */
export async function checkDeploy(options: DeployCheckOptions): Promise<DeployCheckReport> {
  const { store, fingerprint, onProgress, signal } = options;
  const openRuns = await store.openRuns();
  const report: DeployCheckReport = { checked: 0, blocked: [], differences: {} };
  for (const finding of await store.findings()) {
    if (finding.kind !== 'unreadable') continue;
    report.blocked.push({
      sessionId: finding.sessionId,
      runId: undefined,
      state: undefined,
      blockers: [{ kind: 'unreadable', message: finding.message }],
      differences: [],
    });
  }
  for (const run of openRuns) {
    if (signal?.aborted === true) break;
    const checked = await checkRun(store, run, fingerprint);
    report.checked += 1;
    if (checked.blockers.length > 0) report.blocked.push(checked);
    else {
      for (const { kind } of checked.differences) {
        report.differences[kind] = (report.differences[kind] ?? 0) + 1;
      }
    }
    onProgress?.(report.checked, openRuns.length);
  }
  return report;
}

/** One unfinished run against this code: what blocks it, and what differs. */
async function checkRun(
  store: EventStore,
  { sessionId, runId }: OpenRun,
  current: RunFingerprint,
): Promise<BlockedRun> {
  const facts = await store.read(sessionId);
  const loaded = resumeRun(facts, sessionId, runId, turnMachine);
  const started = facts.find(
    (fact): fact is FactOf<'run.started'> => fact.type === 'run.started' && fact.runId === runId,
  );
  const state = facts.findLast((fact) => fact.runId === runId && fact.state !== undefined)?.state;
  const recorded = started === undefined ? undefined : recordedFingerprint(started);
  const differences = recorded === undefined ? [] : compareFingerprints(recorded, current);
  if (loaded === undefined) return { sessionId, runId, state, blockers: [], differences };
  if (!('plan' in loaded)) {
    const blockers = loaded.damage.map(
      (message): DeployBlocker => ({ kind: 'cannot-replay', message }),
    );
    return { sessionId, runId, state, blockers, differences };
  }
  const now = new Map((current.tools ?? []).map((tool) => [tool.name, tool.inputSchemaHash]));
  const then = new Map((recorded?.tools ?? []).map((tool) => [tool.name, tool.inputSchemaHash]));
  const blockers: DeployBlocker[] = [];
  // Only calls that will still run meet the new tools: a started call never runs again (I8).
  for (const { callId, name } of loaded.plan.neverStarted) {
    const hash = now.get(name);
    const before = then.get(name);
    if (hash === undefined) {
      blockers.push({
        kind: 'tool-missing',
        callId,
        name,
        message: `call ${callId} of tool ${name} is still to run, and this runtime has no tool ${name}`,
      });
    } else if (before !== undefined && before !== hash) {
      blockers.push({
        kind: 'tool-schema-changed',
        callId,
        name,
        recorded: before,
        current: hash,
        message: `call ${callId} of tool ${name} is still to run, and its input schema changed since the call was made (${before} → ${hash})`,
      });
    }
  }
  return { sessionId, runId, state, blockers, differences };
}
