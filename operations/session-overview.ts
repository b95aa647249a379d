import type { Fact } from '../events/facts.ts';
import { type PendingDecision, projectTurn } from '../events/project-turn.ts';
import { recordedStateHasTag } from '../machines/pure/state-tags.ts';

/**
 * Where a session's latest run stands, for an operator:
 * - `awaiting`: a person owes a decision (`runtime.decide()` moves it on);
 * - `parked`: unfinished and waiting, with nothing to run (the turn machine's `parked` tag);
 * - `running`: unfinished and not parked: a step or a tool in flight, or a run a crash left
 *   there (`recover()` resumes it);
 * - `completed`, `failed`, `aborted`: how it ended.
 */
export type SessionStatus = 'awaiting' | 'parked' | 'running' | 'completed' | 'failed' | 'aborted';

/** Every status, in the order the CLI shows them. */
export const sessionStatuses: readonly SessionStatus[] = [
  'awaiting',
  'parked',
  'running',
  'completed',
  'failed',
  'aborted',
];

/** One session's latest run, as `turnlog sessions` lists it. */
export interface SessionOverview {
  sessionId: string;
  runId: string;
  status: SessionStatus;
  /** The turn machine's state after the run's last fact that recorded one. */
  state: string | undefined;
  /** The worker that appended the run's latest fact under a lease (`undefined` off a shared store). */
  worker: string | undefined;
  /** The user's input that began the run. */
  input: string | undefined;
  startedAt: string | undefined;
  /** The time of the session's last fact: how long it has been quiet. */
  lastAt: string;
  /** The decisions a person owes. */
  pending: PendingDecision[];
  /** The runs the session has had. */
  runs: number;
  /** How the run ended (`run.ended.reason`), once it did. */
  reason: string | undefined;
}

/**
 * The overview of a session from its facts (`undefined` for an empty log), through `projectTurn`
 * and the chart's tags: nothing is computed here that the projections do not already say.
 */
export function sessionOverview(facts: readonly Fact[]): SessionOverview | undefined {
  const last = facts.at(-1);
  const view = projectTurn(facts);
  const run = view.runs.at(-1);
  if (last === undefined || run === undefined) return undefined;
  return {
    sessionId: last.sessionId,
    runId: run.runId,
    status: statusOf(run.status, run.state),
    state: run.state,
    worker: facts.findLast((fact) => fact.runId === run.runId && fact.workerId !== undefined)
      ?.workerId,
    input: run.input,
    startedAt: run.startedAt,
    lastAt: last.at,
    pending: run.pending,
    runs: view.runs.length,
    reason: run.reason,
  };
}

function statusOf(status: string, state: string | undefined): SessionStatus {
  if (status === 'completed' || status === 'failed' || status === 'aborted') return status;
  if (status === 'awaiting' || recordedStateHasTag(state, 'needsPerson')) return 'awaiting';
  return recordedStateHasTag(state, 'parked') ? 'parked' : 'running';
}

/** What `turnlog sessions` keeps (every field optional: no filter keeps everything). */
export interface SessionFilter {
  statuses?: readonly SessionStatus[];
  /** The worker that appended the latest run's latest fact. */
  worker?: string;
  /** Keeps sessions quiet (no fact) since before this time (ms since the epoch). */
  quietSince?: number;
}

/** True when the overview passes the filter. */
export function matchesFilter(overview: SessionOverview, filter: SessionFilter): boolean {
  if (filter.statuses !== undefined && !filter.statuses.includes(overview.status)) return false;
  if (filter.worker !== undefined && overview.worker !== filter.worker) return false;
  if (filter.quietSince !== undefined && Date.parse(overview.lastAt) >= filter.quietSince) {
    return false;
  }
  return true;
}

/** The order `turnlog sessions` and the console list sessions in: the quietest first. */
export function quietestFirst(left: SessionOverview, right: SessionOverview): number {
  return left.lastAt.localeCompare(right.lastAt) || left.sessionId.localeCompare(right.sessionId);
}

const durationUnits: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `30m`, `2h`, `7d` in milliseconds (an "older than" filter); `undefined` for anything else. */
export function durationMs(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)([smhd])$/.exec(text.trim());
  return match === null
    ? undefined
    : Number(match[1]) * (durationUnits[match[2] as string] as number);
}
