// The log viewer's panels at one fact: the machine chart with the state highlighted, the read
// model (runs, steps, calls with proof, permission, start and settlement; the provider's own
// tools apart, run by the provider), and the request.
import { useMemo } from 'react';
import type { JsonValue, ModelMessage, TurnReadModel } from '../../../index.ts';
import type { RequestAtSeq, StateAtSeq } from '../server/log-view.ts';
import type { MachineChart } from '../server/machine-chart.ts';
import { type Edge, layoutChart } from './chart-layout.ts';

/** The turn machine's chart, the selected fact's state highlighted with its ancestors. */
export function ChartView({ chart, state }: { chart: MachineChart; state: StateAtSeq }) {
  const layout = useMemo(() => layoutChart(chart), [chart]);
  const current = state.replayed ?? state.recorded;
  const active = (id: string) => current === id || current?.startsWith(`${id}.`) === true;
  const leaving = (source: string) => active(source);
  return (
    <section aria-label="machine">
      <h2>
        Machine state: <code data-testid="machine-state">{current ?? 'unknown'}</code>
      </h2>
      <p className="muted">
        recorded <code>{state.recorded ?? '—'}</code>, replayed with the machine's pure transition{' '}
        <code>{state.replayed ?? '—'}</code>
      </p>
      {state.divergence !== undefined && <p className="error">{state.divergence}</p>}
      <svg
        viewBox={`0 0 ${layout.width} ${layout.height}`}
        width="100%"
        style={{ maxWidth: layout.width }}
        role="img"
        aria-label="turn machine chart"
      >
        <defs>
          <marker
            id="arrow"
            viewBox="0 0 8 8"
            refX="7"
            refY="4"
            markerWidth="7"
            markerHeight="7"
            orient="auto"
          >
            <path d="M0,0 L8,4 L0,8 z" fill="currentColor" />
          </marker>
        </defs>
        {layout.boxes.map((box) => (
          <g
            key={box.state.id}
            className={`state ${box.state.type} ${active(box.state.id) ? 'active' : ''}`}
            data-state={box.state.id}
          >
            <rect x={box.x} y={box.y} width={box.width} height={box.height} rx={8} />
            <text
              x={box.x + 8}
              y={box.y + (box.state.type === 'compound' ? 17 : box.height / 2 + 4)}
            >
              {box.state.key}
            </text>
          </g>
        ))}
        {/* The arrows leaving the current state last, over the others they share lines with. */}
        {[...layout.edges]
          .sort((left, right) => Number(leaving(left.source)) - Number(leaving(right.source)))
          .map((edge) => (
            <g
              key={`${edge.source}>${edge.target}`}
              className={`edge ${leaving(edge.source) ? 'leaving' : ''}`}
            >
              <title>
                {edge.source} — {edge.events.join(' | ')} → {edge.target}
              </title>
              <path d={edge.path} markerEnd="url(#arrow)" />
            </g>
          ))}
        {/* One label per target of the leaving arrows (a state's and its parent's may share one). */}
        {[
          ...labels(
            layout.edges.filter((edge) => leaving(edge.source)),
            layout.width,
          ),
        ].map(([target, { x, y, events }]) => (
          <text key={target} className="edge-label" x={x} y={y} textAnchor="start">
            {events.join(' | ')}
          </text>
        ))}
      </svg>
    </section>
  );
}

/**
 * The labels of `edges` by target: each target's events, once each, at its label's place, moved
 * left as far as a label longer than the room to the chart's right edge needs.
 */
function labels(edges: Edge[], width: number) {
  const byTarget = new Map<string, { x: number; y: number; events: string[] }>();
  for (const edge of edges) {
    const label = byTarget.get(edge.target) ?? { ...edge.label, events: [] };
    for (const event of edge.events) if (!label.events.includes(event)) label.events.push(event);
    byTarget.set(edge.target, label);
  }
  // About 6 px a character at the labels' 10.5 px.
  for (const label of byTarget.values()) {
    const length = label.events.join(' | ').length * 6;
    label.x = Math.max(0, Math.min(label.x, width - length));
  }
  return byTarget;
}

/** The run of the selected fact in the read model `projectTurn` made of the facts through it. */
export function ReadModelView({ readModel, runId }: { readModel: TurnReadModel; runId: string }) {
  const run = readModel.runs.find((candidate) => candidate.runId === runId);
  if (run === undefined) return null;
  return (
    <section aria-label="read model">
      <h2>
        Run <code>{run.runId}</code>: <span data-testid="run-status">{run.status}</span>
        {run.reason !== undefined && ` (${run.reason})`}
      </h2>
      <p>
        “{run.input}” · {run.steps.length} step(s) · pending decisions:{' '}
        {run.pending.length === 0
          ? 'none'
          : run.pending.map((open) => `${open.callId} (${open.kind})`).join(', ')}
      </p>
      {run.steps.map((step) => (
        <div key={step.stepId} className="step">
          <h3>
            {step.stepId}: {step.status}, {step.attempts} attempt(s)
            {step.finishReason !== undefined && `, finished ${step.finishReason.unified}`}
          </h3>
          {step.error !== undefined && <p className="error">{step.error.message}</p>}
          {step.text !== '' && <p className="text">{step.text}</p>}
          {step.toolCalls.length > 0 && (
            <table>
              <thead>
                <tr>
                  <th>call</th>
                  <th>proof</th>
                  <th>permission</th>
                  <th>started</th>
                  <th>settlement</th>
                </tr>
              </thead>
              <tbody>
                {step.toolCalls.map((call) => (
                  <tr key={call.callId} data-call={call.callId}>
                    <td>
                      {call.name} <code>{JSON.stringify(call.input)}</code>
                    </td>
                    <td>{call.proof ?? `withheld: ${call.withheld}`}</td>
                    <td>
                      {call.permission === undefined
                        ? '—'
                        : `${call.permission.decision}${call.permission.by === undefined ? '' : ` by ${call.permission.by}`}`}
                    </td>
                    <td>
                      {call.indeterminate ? 'started, indeterminate' : call.started ? 'yes' : 'no'}
                    </td>
                    <td>{call.outcome === undefined ? '—' : `${call.outcome}: ${call.result}`}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {step.providerTools.length > 0 && (
            <table data-testid="provider-tools">
              <thead>
                <tr>
                  <th>run by the provider</th>
                  <th>result</th>
                </tr>
              </thead>
              <tbody>
                {step.providerTools.map((tool) => (
                  <tr key={tool.callId} data-provider-call={tool.callId}>
                    <td>
                      {tool.name}{' '}
                      <code>
                        {tool.input === undefined ? '(call not in this run)' : brief(tool.input)}
                      </code>
                    </td>
                    <td>
                      {tool.outcome === undefined
                        ? 'no result yet'
                        : `${tool.outcome}: ${brief(tool.result ?? null)}`}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
      ))}
    </section>
  );
}

/** The messages of the request the selected step sent, or the next request. */
export function RequestView({ request }: { request: RequestAtSeq }) {
  return (
    <section aria-label="request">
      <h2>
        {request.kind === 'sent'
          ? `Sent by ${request.stepId} (attempt ${request.attempt}) to ${request.provider}`
          : `The next request would carry (${request.provider})`}
      </h2>
      {request.recordedCount !== undefined && (
        <p className={request.recordedCount === request.messages.length ? 'muted' : 'error'}>
          {request.messages.length} message(s); step.started recorded {request.recordedCount}
        </p>
      )}
      {request.system !== undefined && (
        <p className="message-line">
          <strong>system</strong> {request.system}
        </p>
      )}
      <ol className="request" data-testid="request-messages">
        {request.messages.map((message, index) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: messages have no id; the list is rebuilt whole
          <li key={index} data-role={message.role}>
            <strong>{message.role}</strong> {messageText(message)}
          </li>
        ))}
      </ol>
    </section>
  );
}

function messageText(message: ModelMessage): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .map((part) => {
      switch (part.type) {
        case 'text':
          return part.text;
        case 'reasoning':
          return `(reasoning) ${part.text}`;
        case 'tool-call':
          return `→ ${part.name}(${JSON.stringify(part.input)})`;
        case 'tool-result':
          return `← ${part.name}: ${part.text}`;
        case 'provider-tool-call':
          return `→ ${part.name}(${brief(part.input)}) run by the provider`;
        case 'provider-tool-result':
          return `← ${part.name}, run by the provider${part.isError ? ', failed' : ''}: ${brief(part.result)}`;
        default:
          return '';
      }
    })
    .join(' ');
}

/** A JSON value on one line, cut short (a web search's results run to kilobytes). */
function brief(value: JsonValue): string {
  const text = JSON.stringify(value);
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
}
