import type { Fact, FactOf, TraceContext } from '../events/facts.ts';
import type { JsonValue } from '../events/json.ts';
import type { EventStore } from '../store/event-store.ts';
import type { ToolSecrets } from '../tools/tool-output.ts';
import { loadOpenTelemetry } from './otel-api.ts';
import type { Context, Link, Meter, OtelApi, Tracer } from './otel-types.ts';
import { RunMetrics, type RunState } from './run-metrics.ts';
import { RunSegment, type SegmentHost, type SegmentStart } from './run-segment.ts';
import type { TelemetryOptions } from './telemetry-options.ts';
import { fromTraceContext, toTraceContext } from './trace-context.ts';

/** What a driver's segment is opened with (`RunTelemetry.segment`). */
export interface SegmentRequest {
  ids: { sessionId: string; turnId: string; runId: string };
  /** The lease the driver works under (a worker's), else `undefined`. */
  token: { workerId: string; leaseEpoch: number } | undefined;
  start: SegmentStart;
  /** The session's facts before the driver's first: a continued run's trace context is in them. */
  facts: readonly Fact[];
  /** `started`: the caller's context (`callerContext()`), the parent of the run's first span. */
  parent: unknown;
  /** The run's tools' secrets, for content recorded on spans. */
  secretsOf: (name: string, input: JsonValue) => ToolSecrets;
}

/** The API and what was made with it, once it loaded. */
class LoadedTelemetry implements SegmentHost {
  readonly api: OtelApi;
  readonly tracer: Tracer;
  /** `undefined` when the meter is the API's no-op one (no SDK registered): nothing to record. */
  readonly metrics: RunMetrics | undefined;
  readonly recordContent: boolean;
  readonly #states: Map<string, RunState>;

  constructor(api: OtelApi, options: TelemetryOptions, states: Map<string, RunState>) {
    this.api = api;
    this.#states = states;
    this.recordContent = options.recordContent ?? false;
    this.tracer = (options.tracer as Tracer | undefined) ?? api.trace.getTracer('turnlog');
    const meter = (options.meter as Meter | undefined) ?? api.metrics.getMeter('turnlog');
    const noop = meter instanceof (api.createNoopMeter().constructor as new () => Meter);
    this.metrics = noop ? undefined : new RunMetrics(meter, () => states.values());
  }

  runState(runId: string, state: RunState | undefined): void {
    if (state === undefined) this.#states.delete(runId);
    else this.#states.set(runId, state);
  }
}

/**
 * A runtime's telemetry (architecture/observability.md): traces and metrics of its runs through
 * `@opentelemetry/api`, an optional peer loaded once, lazily. Until it loaded, and for good when
 * it is not installed, `segment()` is `undefined`: live runs then keep no observer and do nothing
 * per fact. Each driver of a run gets one `RunSegment`, fed every durable fact with the state it
 * led to (beside the run's handles, in `LiveRuns`).
 */
export class RunTelemetry {
  /** On a store several workers share a parked run is nobody's: this process counts it no more. */
  readonly #shared: boolean;
  readonly #states = new Map<string, RunState>();
  readonly #ready: Promise<void>;
  #loaded: LoadedTelemetry | undefined;
  #timedAppends: Pick<EventStore, 'append'> | undefined;
  #closed = false;

  constructor(options: TelemetryOptions, settings: { shared: boolean }) {
    this.#shared = settings.shared;
    this.#ready = loadOpenTelemetry().then((api) => {
      if (api !== undefined && !this.#closed) {
        this.#loaded = new LoadedTelemetry(api, options, this.#states);
      }
    });
  }

  /** Resolves once the API loaded (or was found missing). */
  ready(): Promise<void> {
    return this.#ready;
  }

  /** The caller's active context (the parent of `send()`'s run span), once the API loaded. */
  async callerContext(): Promise<Context | undefined> {
    await this.#ready;
    return this.#loaded?.api.context.active();
  }

  /** A driver's segment of the run, or `undefined` without the API. */
  segment(request: SegmentRequest): RunSegment | undefined {
    const host = this.#loaded;
    if (host === undefined) return undefined;
    const { api, tracer } = host;
    const { ids, token, start } = request;
    const attributes = {
      'gen_ai.conversation.id': ids.sessionId,
      'turnlog.session.id': ids.sessionId,
      'turnlog.turn.id': ids.turnId,
      'turnlog.run.id': ids.runId,
      ...(token && {
        'turnlog.worker.id': token.workerId,
        'turnlog.lease.epoch': token.leaseEpoch,
      }),
    };
    const { parent, links } = this.#placeInTrace(host.api, request);
    const span = tracer.startSpan(
      'invoke_agent',
      {
        kind: api.SpanKind.INTERNAL,
        attributes: {
          ...attributes,
          'gen_ai.operation.name': 'invoke_agent',
          'turnlog.run.segment': start,
        },
        links,
      },
      parent,
    );
    const spanContext = span.spanContext();
    const recording = span.isRecording();
    const traced = api.isSpanContextValid(spanContext);
    // No SDK registered: a no-op span in no trace, a no-op meter. Nothing to do for this driver.
    if (!recording && !traced && host.metrics === undefined) return undefined;
    return new RunSegment({
      host,
      ids,
      span: recording ? span : undefined,
      context: recording ? api.trace.setSpan(parent, span) : undefined,
      traceContext: traced ? toTraceContext(spanContext) : undefined,
      attributes,
      takenOver: start === 'recovered' && takenOver(request),
      secretsOf: request.secretsOf,
    });
  }

  /** Whether a parked run stays counted here once its driver is dropped (see `RunSegment.end`). */
  get keepsParked(): boolean {
    return !this.#shared;
  }

  /** The store a driver appends through: timed (`turnlog.append.duration`) once the API loaded. */
  appendsTo(store: Pick<EventStore, 'append'>): Pick<EventStore, 'append'> {
    const metrics = this.#loaded?.metrics;
    if (metrics === undefined) return store;
    this.#timedAppends ??= {
      async append(sessionId, facts, options) {
        const started = performance.now();
        try {
          return await store.append(sessionId, facts, options);
        } finally {
          metrics.appendDuration.record((performance.now() - started) / 1000);
        }
      },
    };
    return this.#timedAppends;
  }

  /** A worker's renewal did not renew `count` leases (lost, or the renewal failed). */
  renewalsMissed(count: number): void {
    if (count > 0) this.#loaded?.metrics?.renewalsMissed.add(count);
  }

  /** The runtime closed: its runs are reported no more. */
  close(): void {
    this.#closed = true;
    this.#loaded?.metrics?.close();
    this.#states.clear();
  }

  /**
   * Where the segment's span goes: a new run's under the caller's context; a continued run's under
   * the run's first span (`run.started.trace`), linked to the latest span recorded for it (that
   * one, or a `run.recovered`'s), so the run reads as one trace wherever it went on.
   */
  #placeInTrace(api: OtelApi, request: SegmentRequest): { parent: Context; links: Link[] } {
    if (request.start === 'started') {
      return { parent: (request.parent as Context | undefined) ?? api.context.active(), links: [] };
    }
    const { first, latest } = recordedTraces(request.facts, request.ids.runId);
    const runSpan = first === undefined ? undefined : fromTraceContext(api, first);
    const parent =
      runSpan === undefined
        ? api.ROOT_CONTEXT
        : api.trace.setSpanContext(api.ROOT_CONTEXT, runSpan);
    const previous = latest === undefined ? undefined : fromTraceContext(api, latest);
    const links: Link[] =
      previous === undefined
        ? []
        : [{ context: previous, attributes: { 'turnlog.link': `continues:${request.start}` } }];
    return { parent, links };
  }
}

/** The trace contexts recorded for a run: its first span's, and the latest recorded one. */
function recordedTraces(
  facts: readonly Fact[],
  runId: string,
): { first: TraceContext | undefined; latest: TraceContext | undefined } {
  let latest: TraceContext | undefined;
  for (let index = facts.length - 1; index >= 0; index -= 1) {
    const fact = facts[index] as Fact;
    if (fact.runId !== runId) continue;
    if (fact.type === 'run.recovered' && latest === undefined) latest = fact.trace;
    if (fact.type === 'run.started') {
      const first = (fact as FactOf<'run.started'>).trace;
      return { first, latest: latest ?? first };
    }
  }
  return { first: undefined, latest };
}

/** True when the run's last fact was appended under another worker's lease. */
function takenOver({ facts, ids, token }: SegmentRequest): boolean {
  if (token === undefined) return false;
  const last = facts.findLast((fact) => fact.runId === ids.runId);
  return last?.workerId !== undefined && last.workerId !== token.workerId;
}
