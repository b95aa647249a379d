/**
 * The part of `@opentelemetry/api` turnlog uses, typed structurally (a contract: types only), as
 * `postgresStore` types a `pg` pool: turnlog's declarations then never name the optional peer, and
 * an app without it type-checks (test/package). `loadOpenTelemetry` (otel-api.ts) assigns the real
 * module to `OtelApi`, so the compiler checks that the API satisfies these.
 */

/** An attribute value: a primitive or an array of one kind of primitive (holes allowed). */
export type AttributeValue =
  | string
  | number
  | boolean
  | (string | null | undefined)[]
  | (number | null | undefined)[]
  | (boolean | null | undefined)[];

/** Span and metric attributes. */
export type Attributes = Record<string, AttributeValue | undefined>;

/** An opaque context (the API's `Context`). */
export interface Context {
  getValue(key: symbol): unknown;
}

/** A span's trace state (`tracestate`). */
export interface TraceState {
  serialize(): string;
}

/** What identifies a span across processes. */
export interface SpanContext {
  traceId: string;
  spanId: string;
  traceFlags: number;
  isRemote?: boolean;
  traceState?: TraceState;
}

/** A link from one span to another. */
export interface Link {
  context: SpanContext;
  attributes?: Attributes;
}

/** A span being recorded. */
export interface Span {
  spanContext(): SpanContext;
  setAttribute(key: string, value: AttributeValue): this;
  setAttributes(attributes: Attributes): this;
  addEvent(name: string, attributes?: Attributes): this;
  setStatus(status: { code: number; message?: string }): this;
  recordException(exception: Error | string): void;
  isRecording(): boolean;
  end(): void;
}

/** Starts spans. */
export interface Tracer {
  startSpan(
    name: string,
    options?: { kind?: number; attributes?: Attributes; links?: Link[] },
    context?: Context,
  ): Span;
}

/** A monotonic sum. */
export interface Counter {
  add(value: number, attributes?: Attributes): void;
}

/** A distribution of recorded values. */
export interface Histogram {
  record(value: number, attributes?: Attributes): void;
}

/** What an observable instrument's callback reports values to. */
export interface ObservableResult {
  observe(value: number, attributes?: Attributes): void;
}

/** An instrument whose values are read by a callback at each collection. */
export interface ObservableUpDownCounter {
  addCallback(callback: (result: ObservableResult) => void): void;
  removeCallback(callback: (result: ObservableResult) => void): void;
}

/** Makes instruments. */
export interface Meter {
  createCounter(name: string, options?: { description?: string; unit?: string }): Counter;
  createHistogram(name: string, options?: { description?: string; unit?: string }): Histogram;
  createObservableUpDownCounter(
    name: string,
    options?: { description?: string; unit?: string },
  ): ObservableUpDownCounter;
}

/** The members of `@opentelemetry/api` turnlog calls. */
export interface OtelApi {
  trace: {
    getTracer(name: string, version?: string): Tracer;
    setSpan(context: Context, span: Span): Context;
    setSpanContext(context: Context, spanContext: SpanContext): Context;
  };
  metrics: { getMeter(name: string, version?: string): Meter };
  context: { active(): Context };
  ROOT_CONTEXT: Context;
  SpanKind: { INTERNAL: number; CLIENT: number };
  SpanStatusCode: { ERROR: number };
  isSpanContextValid(spanContext: SpanContext): boolean;
  /** The meter the API hands out with no meter provider registered (its class tells it apart). */
  createNoopMeter(): Meter;
  createTraceState(text?: string): TraceState;
}
