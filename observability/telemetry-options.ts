/**
 * What `createRuntime({ telemetry })` takes (a contract: types only). turnlog reports its runs
 * through `@opentelemetry/api`, an optional peer loaded lazily: without it nothing is loaded,
 * recorded or exported (architecture/observability.md). The tracer and meter are typed
 * structurally, so turnlog's types need no OpenTelemetry package; pass the API's own.
 */

/** An OpenTelemetry `Tracer` (`trace.getTracer(…)` of `@opentelemetry/api`). */
export interface TelemetryTracer {
  startSpan(name: string, options?: object, context?: unknown): unknown;
}

/** An OpenTelemetry `Meter` (`metrics.getMeter(…)` of `@opentelemetry/api`). */
export interface TelemetryMeter {
  createCounter(name: string, options?: object): unknown;
  createHistogram(name: string, options?: object): unknown;
  createObservableUpDownCounter(name: string, options?: object): unknown;
}

/** Traces and metrics of a runtime's runs (`createRuntime({ telemetry })`). */
export interface TelemetryOptions {
  /**
   * The tracer spans are started with. Default: the global tracer provider's `turnlog` tracer
   * (the API's proxy: a provider registered after `createRuntime` is used from then on); with
   * none registered, no span is kept and nothing is done per fact.
   */
  tracer?: TelemetryTracer;
  /**
   * The meter instruments are made with. Default: the global meter provider's `turnlog` meter,
   * read once the API loaded (register the SDK before `createRuntime`).
   */
  meter?: TelemetryMeter;
  /**
   * Also record what the model was given and said: the user's message and the system prompt on
   * the run's span, each step's output, each tool call's arguments and result (the GenAI
   * conventions' opt-in attributes). Tool arguments are redacted with the tool's `secrets`, and
   * left out when those cannot be read. Default `false`: ids, names, counts and timings only.
   */
  recordContent?: boolean;
}
