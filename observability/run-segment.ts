import { assertNever, type Fact, type FactOf, type TraceContext } from '../events/facts.ts';
import type { JsonValue } from '../events/json.ts';
import type { ToolSecrets } from '../tools/tool-output.ts';
import { contentAttributes } from './content-attributes.ts';
import type { Attributes, Context, OtelApi, Span, Tracer } from './otel-types.ts';
import type { ModelAttributes, RunMetrics, RunState } from './run-metrics.ts';

/** How a driver came to drive the run: it started it, rebuilt it parked, or recovered it. */
export type SegmentStart = 'started' | 'resumed' | 'recovered';

/**
 * Why a driver drives the run here no more: `ended` (its `run.ended`), `parked`, `lost` (a
 * worker's lease), `failed` (the log could not be written), `detached` (the runtime closed),
 * `unstarted` (its `run.started` was refused).
 */
export type SegmentEnd = 'ended' | 'parked' | 'lost' | 'failed' | 'detached' | 'unstarted';

/** What a segment reads of the state a fact led to: its tags (the chart's, never its name). */
export interface ReachedState {
  hasTag(tag: string): boolean;
}

/** The parts of a runtime's telemetry a segment reports to. */
export interface SegmentHost {
  readonly api: OtelApi;
  /** The tracer the segment's child spans start with (`undefined`: not traced). */
  readonly tracer: Tracer | undefined;
  readonly metrics: RunMetrics | undefined;
  readonly recordContent: boolean;
  /** The run is in `state` here now (`undefined`: this process counts it no more). */
  runState(runId: string, state: RunState | undefined): void;
}

/** What a segment is built from (`RunTelemetry.segment`). */
export interface SegmentParts {
  host: SegmentHost;
  ids: { sessionId: string; turnId: string; runId: string };
  /** The segment's span (`undefined`: not traced); its children are started in `context`. */
  span: Span | undefined;
  context: Context | undefined;
  /** The span's context as the log records it, when it is a valid one. */
  traceContext: TraceContext | undefined;
  /** Common attributes of every child span (ids, worker, lease). */
  attributes: Attributes;
  /** The run was taken over from another worker: its `run.recovered` counts as a takeover. */
  takenOver: boolean;
  secretsOf: (name: string, input: JsonValue) => ToolSecrets;
}

/** A tool call executing, traced. */
interface ToolSpan {
  span: Span;
  secrets: ToolSecrets | undefined;
}

/**
 * One driver's part of a run's telemetry (architecture/observability.md): from the driver's first
 * fact to the moment it drives the run here no more, one `invoke_agent` span, with a `chat` span
 * per provider step and an `execute_tool` span per tool call, all derived from the facts as they
 * become durable (`fact`), and the metrics those facts carry. A run parked, recovered or taken over
 * has a segment per driver, each a child of the run's first span (recorded in `run.started`).
 */
export class RunSegment {
  /** The span's trace context, for the `run.started` or `run.recovered` this driver writes. */
  readonly traceContext: TraceContext | undefined;
  readonly #host: SegmentHost;
  readonly #ids: SegmentParts['ids'];
  readonly #span: Span | undefined;
  readonly #context: Context | undefined;
  readonly #attributes: Attributes;
  readonly #takenOver: boolean;
  readonly #secretsOf: SegmentParts['secretsOf'];
  #state: RunState | undefined;
  #lastState = '';
  #model: ModelAttributes | undefined;
  #step: Span | undefined;
  #stepStarted = 0;
  #tools: Map<string, ToolSpan> | undefined;
  #ended = false;

  constructor(parts: SegmentParts) {
    this.#host = parts.host;
    this.#ids = parts.ids;
    this.#span = parts.span;
    this.#context = parts.context;
    this.traceContext = parts.traceContext;
    this.#attributes = parts.attributes;
    this.#takenOver = parts.takenOver;
    this.#secretsOf = parts.secretsOf;
  }

  /** A fact of the run is durable (`reached`: the state it led to). */
  fact(fact: Fact, reached: ReachedState): void {
    if (this.#ended) return;
    if (fact.state !== undefined) this.#lastState = fact.state;
    const state: RunState = reached.hasTag('needsPerson')
      ? 'waiting_for_person'
      : reached.hasTag('parked')
        ? 'parked'
        : 'running';
    if (state !== this.#state && fact.type !== 'run.ended') {
      this.#state = state;
      this.#host.runState(this.#ids.runId, state);
    }
    if (this.#host.metrics !== undefined) this.#measure(fact, this.#host.metrics);
    if (this.#span !== undefined) this.#trace(fact, this.#span);
  }

  /**
   * The driver drives the run here no more. A parked run stays counted as parked or waiting in
   * this process when `keepParked` (a store for one process: nobody else can take it up).
   */
  end(reason: SegmentEnd, keepParked: boolean, error?: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    if (!(reason === 'parked' && keepParked)) this.#host.runState(this.#ids.runId, undefined);
    const span = this.#span;
    if (span === undefined) return;
    const { SpanStatusCode } = this.#host.api;
    for (const { span: tool } of this.#tools?.values() ?? []) {
      tool.setAttribute('turnlog.tool.outcome', 'interrupted');
      tool.end();
    }
    this.#step?.setAttribute('turnlog.step.outcome', 'interrupted');
    this.#step?.end();
    span.setAttribute('turnlog.state', this.#lastState);
    span.setAttribute('turnlog.run.segment_end', reason);
    if (error !== undefined) {
      span.recordException(error instanceof Error ? error : String(error));
      if (reason === 'failed' || reason === 'unstarted') {
        span.setStatus({ code: SpanStatusCode.ERROR, message: errorText(error) });
      }
    }
    span.end();
  }

  /** The metrics a fact carries (no span needed). */
  #measure(fact: Fact, metrics: RunMetrics): void {
    switch (fact.type) {
      case 'step.started': {
        const { provider, modelId } = fact.request;
        if (this.#model?.provider !== provider || this.#model.model !== modelId) {
          this.#model = metrics.modelAttributes(provider, modelId);
        }
        this.#stepStarted = performance.now();
        return;
      }
      case 'step.completed': {
        const model = this.#model;
        if (model === undefined) return; // its step.started was written by another process
        metrics.steps.add(1, model.completed);
        metrics.stepDuration.record((performance.now() - this.#stepStarted) / 1000, model.chat);
        const { inputTokens, outputTokens } = fact.usage;
        if (inputTokens !== undefined) metrics.tokens.record(inputTokens, model.input);
        if (outputTokens !== undefined) metrics.tokens.record(outputTokens, model.output);
        return;
      }
      case 'step.failed': {
        const model = this.#model;
        if (model === undefined) return;
        const attributes = metrics.failedAttributes(model, fact.error.kind);
        metrics.steps.add(1, attributes);
        metrics.stepDuration.record((performance.now() - this.#stepStarted) / 1000, attributes);
        return;
      }
      case 'tool.settled':
        if (fact.durationMs !== undefined) {
          metrics.toolDuration.record(
            fact.durationMs / 1000,
            metrics.toolAttributes(fact.name, fact.outcome),
          );
        }
        return;
      case 'retry.due':
        metrics.retries.add(1);
        return;
      case 'run.recovered':
        metrics.recoveries.add(1);
        if (this.#takenOver) metrics.takeovers.add(1);
        return;
      default:
        return;
    }
  }

  /** The spans and span events a fact makes. */
  #trace(fact: Fact, span: Span): void {
    switch (fact.type) {
      case 'run.started':
        if (this.#host.recordContent) span.setAttributes(contentAttributes.runInput(fact));
        return;
      case 'step.started':
        this.#startStep(fact);
        return;
      case 'step.completed':
      case 'step.failed':
        this.#endStep(fact);
        return;
      case 'tool.started':
        this.#startTool(fact);
        return;
      case 'tool.settled':
        this.#endTool(fact, span);
        return;
      case 'run.ended':
        this.#runEnded(fact, span);
        return;
      case 'tool.permission.requested':
      case 'tool.permission.decided':
      case 'tool.indeterminate':
      case 'tool.reconciled':
      case 'retry.due':
      case 'compaction.started':
      case 'compaction.completed':
      case 'compaction.failed':
      case 'steering.received':
      case 'run.stop.requested':
      case 'run.recovered':
        span.addEvent(`turnlog.${fact.type}`, eventAttributes(fact));
        return;
      default:
        assertNever(fact, 'fact');
    }
  }

  #startStep(fact: FactOf<'step.started'>): void {
    const { api } = this.#host;
    this.#step?.end(); // a step left open by a fact this segment never saw
    this.#step = this.#startChild(`chat ${fact.request.modelId}`, api.SpanKind.CLIENT, {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': fact.request.provider,
      'gen_ai.request.model': fact.request.modelId,
      'turnlog.step.id': fact.stepId,
      'turnlog.step.attempt': fact.attempt,
      'turnlog.state': fact.state ?? '',
    });
  }

  #endStep(fact: FactOf<'step.completed'> | FactOf<'step.failed'>): void {
    const step = this.#step;
    if (step === undefined) return;
    this.#step = undefined;
    if (fact.type === 'step.completed') {
      step.setAttributes(stepCompletedAttributes(fact));
      if (this.#host.recordContent) {
        step.setAttributes(contentAttributes.stepOutput(fact, this.#secretsOf));
      }
      step.setAttribute('turnlog.step.outcome', 'completed');
    } else {
      step.setAttributes({
        'turnlog.step.outcome': 'failed',
        'error.type': fact.error.kind,
        'turnlog.step.retryable': fact.error.retryable,
        'turnlog.step.observed_output': fact.observedOutput,
      });
      step.setStatus({ code: this.#host.api.SpanStatusCode.ERROR, message: fact.error.message });
    }
    step.end();
  }

  #startTool(fact: FactOf<'tool.started'>): void {
    const { api, recordContent } = this.#host;
    const span = this.#startChild(`execute_tool ${fact.name}`, api.SpanKind.INTERNAL, {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': fact.name,
      'gen_ai.tool.call.id': fact.callId,
      'gen_ai.tool.type': 'function',
    });
    const secrets = recordContent ? this.#secretsOf(fact.name, fact.input) : undefined;
    if (secrets !== undefined) span.setAttributes(contentAttributes.toolArguments(fact, secrets));
    this.#tools ??= new Map();
    this.#tools.set(fact.callId, { span, secrets });
  }

  #endTool(fact: FactOf<'tool.settled'>, segment: Span): void {
    const tool = this.#tools?.get(fact.callId);
    if (tool === undefined) {
      // Settled without running here: decided not to run, or started by another process.
      segment.addEvent('turnlog.tool.settled', eventAttributes(fact));
      return;
    }
    this.#tools?.delete(fact.callId);
    const { span, secrets } = tool;
    span.setAttributes({
      'turnlog.tool.outcome': fact.outcome,
      'turnlog.tool.truncated': fact.truncated,
    });
    if (secrets !== undefined) span.setAttributes(contentAttributes.toolResult(fact, secrets));
    if (fact.outcome === 'error') {
      span.setStatus({
        code: this.#host.api.SpanStatusCode.ERROR,
        message: fact.text.slice(0, 500),
      });
    }
    span.end();
  }

  #runEnded(fact: FactOf<'run.ended'>, span: Span): void {
    span.setAttributes({ 'turnlog.run.status': fact.status, 'turnlog.run.reason': fact.reason });
    if (fact.status === 'failed') {
      span.setStatus({
        code: this.#host.api.SpanStatusCode.ERROR,
        message: fact.error?.message ?? fact.reason,
      });
    }
  }

  #startChild(name: string, kind: number, attributes: Attributes): Span {
    // A segment is traced only with a tracer (RunTelemetry.segment).
    const tracer = this.#host.tracer as Tracer;
    return tracer.startSpan(
      name,
      { kind, attributes: { ...this.#attributes, ...attributes } },
      this.#context,
    );
  }
}

/** The attributes of a completed step: the response, its finish reason and its usage. */
function stepCompletedAttributes(fact: FactOf<'step.completed'>): Attributes {
  const { usage, response, finishReason } = fact;
  const attributes: Attributes = {
    'gen_ai.response.finish_reasons': [finishReason.unified],
    'turnlog.step.tool_calls': fact.toolCalls.length,
  };
  if (response.id !== undefined) attributes['gen_ai.response.id'] = response.id;
  if (response.modelId !== undefined) attributes['gen_ai.response.model'] = response.modelId;
  if (usage.inputTokens !== undefined) attributes['gen_ai.usage.input_tokens'] = usage.inputTokens;
  if (usage.outputTokens !== undefined) {
    attributes['gen_ai.usage.output_tokens'] = usage.outputTokens;
  }
  if (usage.reasoningTokens !== undefined) {
    attributes['gen_ai.usage.reasoning.output_tokens'] = usage.reasoningTokens;
  }
  if (usage.cachedInputTokens !== undefined) {
    attributes['gen_ai.usage.cache_read.input_tokens'] = usage.cachedInputTokens;
  }
  return attributes;
}

/** A span event's attributes for a fact: its ids and what it decided, never its content. */
function eventAttributes(fact: Fact): Attributes {
  const attributes: Attributes = {
    'turnlog.fact.seq': fact.seq,
    'turnlog.state': fact.state ?? '',
  };
  if ('callId' in fact) attributes['gen_ai.tool.call.id'] = fact.callId;
  if ('name' in fact) attributes['gen_ai.tool.name'] = fact.name;
  switch (fact.type) {
    case 'tool.permission.decided':
      attributes['turnlog.permission.decision'] = fact.decision;
      attributes['turnlog.permission.by'] = fact.by;
      break;
    case 'tool.settled':
      attributes['turnlog.tool.outcome'] = fact.outcome;
      break;
    case 'retry.due':
      attributes['turnlog.step.attempt'] = fact.attempt;
      break;
    case 'tool.reconciled':
      attributes['turnlog.tool.reconciled'] = fact.answer;
      break;
    case 'run.recovered':
      attributes['turnlog.recovered.interrupted'] = fact.interrupted;
      attributes['turnlog.recovered.indeterminate'] = fact.indeterminate;
      break;
    case 'compaction.started':
      attributes['turnlog.compaction.reason'] = fact.reason;
      break;
    case 'compaction.failed':
      attributes['error.type'] = fact.error.kind;
      break;
    default:
      break;
  }
  return attributes;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
