// The log viewer: one session's facts as a timeline, a scrubber over `seq`, and at the selected
// fact the machine's state on its chart, the read model and the request the model was (or would
// next be) sent — all computed by the server from the log (examples/web/server/log-routes.ts).
// While the session's last run is unfinished the page reads the log again every second, so it
// follows a live run's states with nothing from the internet (the Stately inspector needs it).
// Above it, the operator console (sessions-console.tsx): every session's latest run, filtered,
// counted and searched, with the actions a person may take on a pending call or a live run.
import { StrictMode, useCallback, useEffect, useRef, useState } from 'react';
import { createRoot } from 'react-dom/client';
import type { Fact, LogDamage, StoreFinding } from '../../../index.ts';
import type { LogViewAtSeq } from '../server/log-view.ts';
import type { MachineChart } from '../server/machine-chart.ts';
import { ChartView, ReadModelView, RequestView } from './log-panels.tsx';
import { SessionsConsole } from './sessions-console.tsx';
import './styles.css';

interface SessionLog {
  facts: Fact[];
  damage: LogDamage[];
  storeFindings: StoreFinding[];
  recovered: {
    runId: string;
    status: string;
    interruptedIn?: string;
    indeterminate?: string[];
    damage?: string[];
  }[];
}

/** How often a page following a live run reads the log again. */
const followEveryMs = 1_000;

/** Whether the session's last run has no `run.ended` yet. */
function lastRunUnfinished(facts: readonly Fact[]): boolean {
  const started = facts.findLast((fact) => fact.type === 'run.started');
  return (
    started !== undefined &&
    !facts.some((fact) => fact.type === 'run.ended' && fact.runId === started.runId)
  );
}

async function getJson<T>(path: string): Promise<T> {
  const response = await fetch(path);
  if (!response.ok) throw new Error(`${path} answered ${response.status}`);
  return response.json();
}

/** Keeps `?session=` and `?seq=` in the address, so a view can be linked to. */
function setQuery(values: Record<string, string | undefined>) {
  const url = new URL(window.location.href);
  for (const [key, value] of Object.entries(values)) {
    if (value === undefined) url.searchParams.delete(key);
    else url.searchParams.set(key, value);
  }
  window.history.replaceState(null, '', url);
}

function App() {
  const query = new URL(window.location.href).searchParams;
  const [sessions, setSessions] = useState<string[]>([]);
  const [session, setSession] = useState(query.get('session') ?? '');
  const [chart, setChart] = useState<MachineChart>();
  const open = (id: string) => {
    setSession(id);
    setQuery({ session: id, seq: undefined });
  };
  useEffect(() => {
    getJson<string[]>('/sessions').then(setSessions, () => setSessions([]));
    getJson<MachineChart>('/machine').then(setChart, () => {});
  }, []);
  return (
    <main className="viewer">
      <header>
        <h1>turnlog log viewer</h1>
        <label>
          session{' '}
          <select
            aria-label="session"
            value={session}
            onChange={(event) => open(event.target.value)}
          >
            <option value="">choose…</option>
            {[...new Set([...sessions, ...(session === '' ? [] : [session])])].map((id) => (
              <option key={id} value={id}>
                {id}
              </option>
            ))}
          </select>
        </label>
        {session !== '' && (
          <a href={`/?session=${encodeURIComponent(session)}`}>open in the chat</a>
        )}
      </header>
      <SessionsConsole selected={session} onSelect={open} />
      {session !== '' && chart !== undefined && (
        <Session
          key={session}
          session={session}
          chart={chart}
          initialSeq={Number(query.get('seq')) || undefined}
        />
      )}
    </main>
  );
}

function Session({
  session,
  chart,
  initialSeq,
}: {
  session: string;
  chart: MachineChart;
  initialSeq: number | undefined;
}) {
  const [log, setLog] = useState<SessionLog>();
  const [seq, setSeq] = useState<number | undefined>(initialSeq);
  const [view, setView] = useState<LogViewAtSeq>();
  const [error, setError] = useState<string>();
  // The last seq read: a selection on it moves on with the log (the page follows the run).
  const lastRead = useRef<number | undefined>(undefined);
  const timeline = useRef<HTMLOListElement>(null);
  const read = useCallback(
    () =>
      getJson<SessionLog>(`/sessions/${encodeURIComponent(session)}/log`).then(
        (loaded) => {
          const last = loaded.facts.at(-1)?.seq;
          const previous = lastRead.current;
          lastRead.current = last;
          setLog(loaded);
          setSeq((current) => (current === undefined || current === previous ? last : current));
        },
        (cause: Error) => setError(cause.message),
      ),
    [session],
  );
  useEffect(() => {
    read();
  }, [read]);
  const following = log !== undefined && lastRunUnfinished(log.facts);
  useEffect(() => {
    if (!following) return;
    const timer = setInterval(read, followEveryMs);
    return () => clearInterval(timer);
  }, [following, read]);
  // Whether the timeline was fitted to the window once (on open).
  const fitted = useRef(false);
  useEffect(() => {
    // Runs again when the log grows: the list holds new facts, maybe the selected one.
    if (log === undefined) return;
    const list = timeline.current;
    const selected = list?.querySelector<HTMLElement>(`button[data-seq="${seq}"]`);
    if (list === null || selected === null || selected === undefined) return;
    // On open, once the chart above it is drawn (it comes with the view and moves the list), the
    // list ends inside the window: the last fact, selected, is at its bottom, not off-screen.
    if (!fitted.current && view?.seq === seq) {
      fitted.current = true;
      const room = window.innerHeight - list.getBoundingClientRect().top - 8;
      if (room >= 160) list.style.maxHeight = `${room}px`;
    }
    // The selected fact in view inside the timeline (the page itself does not move).
    const top = selected.offsetTop - list.offsetTop;
    if (top < list.scrollTop || top + selected.offsetHeight > list.scrollTop + list.clientHeight) {
      list.scrollTop = top - list.clientHeight / 2;
    }
    if (selected.getBoundingClientRect().bottom > window.innerHeight) {
      selected.scrollIntoView({ block: 'nearest' });
    }
  }, [seq, log, view]);
  useEffect(() => {
    if (seq === undefined) return;
    setQuery({ seq: String(seq) });
    getJson<LogViewAtSeq>(`/sessions/${encodeURIComponent(session)}/view?seq=${seq}`).then(
      setView,
      (cause: Error) => setError(cause.message),
    );
  }, [session, seq]);

  if (error !== undefined) return <p className="error">{error}</p>;
  if (log === undefined) return <p className="muted">Reading the log…</p>;
  if (log.facts.length === 0) return <p className="muted">This session has no facts.</p>;
  const seqs = log.facts.map((fact) => fact.seq);
  const damaged = new Set(log.damage.flatMap((finding) => finding.seqs));
  const index = seqs.indexOf(seq ?? -1);
  const move = (by: number) => setSeq(seqs[Math.min(seqs.length - 1, Math.max(0, index + by))]);

  return (
    <>
      <Findings log={log} />
      <section className="scrubber" aria-label="scrubber">
        <button type="button" onClick={() => move(-1)} disabled={index <= 0}>
          ◀
        </button>
        <input
          type="range"
          aria-label="seq"
          min={0}
          max={seqs.length - 1}
          value={Math.max(0, index)}
          onChange={(event) => setSeq(seqs[Number(event.target.value)])}
        />
        <button type="button" onClick={() => move(1)} disabled={index >= seqs.length - 1}>
          ▶
        </button>
        <output data-testid="selected-seq">
          seq {seq} of {seqs.at(-1)}
        </output>
        {following && (
          <span className="live" data-testid="following">
            following the live run
          </span>
        )}
      </section>
      {view !== undefined && view.seq === seq && <ChartView chart={chart} state={view.state} />}
      <div className="columns">
        <ol className="timeline" aria-label="timeline" ref={timeline}>
          {log.facts.map((fact) => (
            <li key={fact.id}>
              <button
                type="button"
                className={`${fact.seq === seq ? 'selected' : ''} ${damaged.has(fact.seq) ? 'damaged' : ''}`}
                onClick={() => setSeq(fact.seq)}
                data-seq={fact.seq}
              >
                <span className="seq">{fact.seq}</span> <span className="type">{fact.type}</span>{' '}
                <span className="muted">{fact.state}</span>
              </button>
            </li>
          ))}
        </ol>
        {view !== undefined && view.seq === seq && (
          <div className="panels">
            <RequestView request={view.request} />
            <ReadModelView readModel={view.readModel} runId={view.fact.runId} />
            <section aria-label="fact">
              <details>
                <summary>
                  Fact {view.seq}: {view.fact.type}
                </summary>
                <pre>{JSON.stringify(view.fact, null, 2)}</pre>
              </details>
            </section>
          </div>
        )}
      </div>
    </>
  );
}

function Findings({ log }: { log: SessionLog }) {
  const recovered = log.recovered;
  // What recover() found at start may be over by now: say how the run ended since.
  const endedSince = (runId: string) =>
    log.facts.find((fact) => fact.type === 'run.ended' && fact.runId === runId);
  if (log.damage.length === 0 && log.storeFindings.length === 0 && recovered.length === 0)
    return null;
  return (
    <section className="findings" aria-label="findings">
      {recovered.map((run) => (
        <p key={run.runId}>
          Recovered at start: run <code>{run.runId}</code> was interrupted in{' '}
          <code>{run.interruptedIn}</code>; {recoveredStatus(run.status, endedSince(run.runId))}
          {run.indeterminate !== undefined &&
            run.indeterminate.length > 0 &&
            ` Indeterminate: ${run.indeterminate.join(', ')}.`}
        </p>
      ))}
      {log.damage.map((finding) => (
        <p key={`${finding.kind}:${finding.seqs.join(',')}`} className="error">
          Damage ({finding.kind}, seq {finding.seqs.join(', ')}): {finding.message}
        </p>
      ))}
      {log.storeFindings.map((finding) => (
        <p key={`${finding.kind}:${finding.file}:${finding.line}`} className="error">
          Store ({finding.kind}): {finding.message}
        </p>
      ))}
    </section>
  );
}

/** The recovered run's status then, and its end since, if it ended. */
function recoveredStatus(status: string, ended: Fact | undefined): string {
  if (status === 'damaged') return 'it cannot be resumed as it is.';
  if (ended?.type !== 'run.ended') return `it is ${status}.`;
  return `it was ${status}, and has since ended ${ended.status} (seq ${ended.seq}).`;
}

createRoot(document.getElementById('root') as HTMLElement).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
