// The operator console on the log viewer page: every session's latest run (the server's
// `consoleHandler`, under /api/console), filtered as `turnlog sessions` filters, counted per
// status, searched by session, run or call id, read again every two seconds; and the actions a
// person may take on it (approve, deny, report unknown a pending call; stop an unfinished run),
// each one POST of JSON to the same runtime.decide()/stop() the application calls.
import { useCallback, useEffect, useState } from 'react';
import type { ConsoleSession, ConsoleSessionList, SessionStatus } from '../../../index.ts';

const statuses: readonly SessionStatus[] = [
  'awaiting',
  'parked',
  'running',
  'completed',
  'failed',
  'aborted',
];

/** How often the list is read again (live updates: a poll, nothing held per page on the server). */
const refreshEveryMs = 2_000;

const api = '/api/console';

/** The filters, as the query string of `GET /api/console/sessions`. */
interface Filters {
  statuses: SessionStatus[];
  worker: string;
  olderThan: string;
  q: string;
}

function listPath(filters: Filters): string {
  const query = new URLSearchParams();
  if (filters.statuses.length > 0) query.set('status', filters.statuses.join(','));
  if (filters.worker.trim() !== '') query.set('worker', filters.worker.trim());
  if (filters.olderThan !== '') query.set('olderThan', filters.olderThan);
  if (filters.q.trim() !== '') query.set('q', filters.q.trim());
  return `${api}/sessions?${query}`;
}

/** One action: a JSON POST (the trust layer refuses anything else), its error shown as said. */
async function postAction(
  path: string,
  body: Record<string, unknown>,
): Promise<string | undefined> {
  const response = await fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.ok) return undefined;
  const answer = (await response.json().catch(() => ({}))) as { error?: string; message?: string };
  return `${answer.error ?? response.status}: ${answer.message ?? 'refused'}`;
}

/** The sessions list with its filters, counts, search and actions; `onSelect` opens a session. */
export function SessionsConsole({
  selected,
  onSelect,
}: {
  selected: string;
  onSelect: (sessionId: string) => void;
}) {
  const [filters, setFilters] = useState<Filters>({
    statuses: [],
    worker: '',
    olderThan: '',
    q: '',
  });
  const [list, setList] = useState<ConsoleSessionList>();
  const [error, setError] = useState<string>();
  const read = useCallback(async () => {
    const response = await fetch(listPath(filters));
    const answer = await response.json();
    if (response.ok) {
      setList(answer as ConsoleSessionList);
      setError(undefined);
    } else setError(`${answer.error}: ${answer.message}`);
  }, [filters]);
  useEffect(() => {
    read().catch((cause: Error) => setError(cause.message));
    const timer = setInterval(() => {
      read().catch((cause: Error) => setError(cause.message));
    }, refreshEveryMs);
    return () => clearInterval(timer);
  }, [read]);
  const act = async (path: string, body: Record<string, unknown>) => {
    setError(await postAction(path, body));
    await read();
  };
  const toggle = (status: SessionStatus) =>
    setFilters((current) => ({
      ...current,
      statuses: current.statuses.includes(status)
        ? current.statuses.filter((other) => other !== status)
        : [...current.statuses, status],
    }));

  return (
    <section className="console" aria-label="sessions">
      <div className="console-filters">
        {statuses.map((status) => (
          <button
            key={status}
            type="button"
            className={`status-filter ${filters.statuses.includes(status) ? 'selected' : ''}`}
            aria-pressed={filters.statuses.includes(status)}
            data-status={status}
            onClick={() => toggle(status)}
          >
            {status} <span className="count">{list?.counts[status] ?? 0}</span>
          </button>
        ))}
        <input
          aria-label="search"
          placeholder="session, run or call id"
          value={filters.q}
          onChange={(event) => setFilters({ ...filters, q: event.target.value })}
        />
        <input
          aria-label="worker"
          placeholder="worker"
          value={filters.worker}
          onChange={(event) => setFilters({ ...filters, worker: event.target.value })}
        />
        <select
          aria-label="older than"
          value={filters.olderThan}
          onChange={(event) => setFilters({ ...filters, olderThan: event.target.value })}
        >
          <option value="">any age</option>
          <option value="5m">quiet 5m+</option>
          <option value="1h">quiet 1h+</option>
          <option value="1d">quiet 1d+</option>
        </select>
      </div>
      {error !== undefined && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <table className="sessions">
        <thead>
          <tr>
            <th>session</th>
            <th>status</th>
            <th>state</th>
            <th>worker</th>
            <th>last fact</th>
            <th>owed / actions</th>
          </tr>
        </thead>
        <tbody>
          {list?.sessions.map((session) => (
            <SessionRow
              key={session.sessionId}
              session={session}
              selected={session.sessionId === selected}
              onSelect={onSelect}
              act={act}
            />
          ))}
        </tbody>
      </table>
      <p className="muted" data-testid="sessions-total">
        {list === undefined ? 'Reading…' : `${list.sessions.length} of ${list.total} sessions`}
      </p>
    </section>
  );
}

function SessionRow({
  session,
  selected,
  onSelect,
  act,
}: {
  session: ConsoleSession;
  selected: boolean;
  onSelect: (sessionId: string) => void;
  act: (path: string, body: Record<string, unknown>) => Promise<void>;
}) {
  const path = `${api}/sessions/${encodeURIComponent(session.sessionId)}`;
  const unfinished = ['awaiting', 'parked', 'running'].includes(session.status);
  return (
    <tr
      className={selected ? 'selected' : ''}
      data-session={session.sessionId}
      data-status={session.status}
    >
      <td>
        <button type="button" className="link" onClick={() => onSelect(session.sessionId)}>
          {session.sessionId}
        </button>
        {session.matched !== undefined && <span className="muted"> ({session.matched})</span>}
      </td>
      <td>
        <span className={`status-badge ${session.status}`}>{session.status}</span>
      </td>
      <td className="muted">{session.state}</td>
      <td className="muted">{session.worker ?? ''}</td>
      <td className="muted">{session.lastAt.replace('T', ' ').slice(0, 19)}</td>
      <td>
        {session.pending.map((decision) => (
          <div key={decision.callId} className="pending" data-call={decision.callId}>
            <code>{decision.name}</code>{' '}
            <span className="muted">{JSON.stringify(decision.input)}</span>{' '}
            {decision.kind === 'permission' ? (
              <>
                <button
                  type="button"
                  onClick={() =>
                    act(`${path}/decide`, { callId: decision.callId, decision: 'allow' })
                  }
                >
                  Approve
                </button>
                <button
                  type="button"
                  onClick={() =>
                    act(`${path}/decide`, { callId: decision.callId, decision: 'deny' })
                  }
                >
                  Deny
                </button>
              </>
            ) : (
              <button
                type="button"
                onClick={() =>
                  act(`${path}/decide`, { callId: decision.callId, decision: 'report-unknown' })
                }
              >
                Report unknown
              </button>
            )}
          </div>
        ))}
        {unfinished && (
          <button type="button" className="stop" onClick={() => act(`${path}/stop`, {})}>
            Stop run
          </button>
        )}
      </td>
    </tr>
  );
}
