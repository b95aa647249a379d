// The routes the log viewer page reads, all computed from the log (nothing re-executed):
//   GET /sessions                   → [sessionId, …]
//   GET /sessions/:id/log           → { facts, damage, storeFindings, recovered }
//   GET /sessions/:id/view?seq=N    → the view at fact N (state, read model, request)
//   GET /machine                    → the turn machine's chart, from its definition
import {
  decodePathSegment,
  type EventStore,
  type RecoveredRun,
  type Runtime,
} from '../../../index.ts';
import { logDamage, logViewAt } from './log-view.ts';
import { machineChart } from './machine-chart.ts';

const chart = machineChart();

/** The log routes' answers; `undefined` for a path they do not serve. */
export function createLogRoutes(options: {
  runtime: Runtime;
  store: EventStore;
  recovered: readonly RecoveredRun[];
}) {
  const { runtime, store, recovered } = options;
  return async (url: URL): Promise<{ status: number; body: unknown } | undefined> => {
    if (url.pathname === '/machine') return { status: 200, body: chart };
    if (url.pathname === '/sessions') return { status: 200, body: await store.sessions() };
    const match = /^\/sessions\/([^/]+)\/(log|view)$/.exec(url.pathname);
    if (match === null) return undefined;
    const sessionId = decodePathSegment(match[1] ?? '');
    const facts = await runtime.facts(sessionId);
    if (match[2] === 'log') {
      const findings = await store.findings();
      return {
        status: 200,
        body: {
          facts,
          damage: logDamage(facts),
          storeFindings: findings.filter((finding) => finding.sessionId === sessionId),
          // What recover() found for this session when the server started.
          recovered: recovered
            .filter((run) => run.sessionId === sessionId)
            .map((run) =>
              run.status === 'damaged'
                ? {
                    runId: run.runId,
                    status: run.status,
                    interruptedIn: run.interruptedIn,
                    damage: run.damage,
                  }
                : {
                    runId: run.runId,
                    status: run.status,
                    interruptedIn: run.interruptedIn,
                    indeterminate: run.indeterminate,
                  },
            ),
        },
      };
    }
    const seq = Number(url.searchParams.get('seq'));
    const view = Number.isInteger(seq) ? logViewAt(facts, seq) : undefined;
    if (view === undefined) {
      return {
        status: 404,
        body: {
          error: 'NotFound',
          message: `Session ${sessionId} has no fact with seq ${url.searchParams.get('seq')}.`,
        },
      };
    }
    return { status: 200, body: view };
  };
}
