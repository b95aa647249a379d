import { AsyncLocalStorage } from 'node:async_hooks';
import { type Context, type ContextManager, ROOT_CONTEXT } from '@opentelemetry/api';
import {
  type DataPoint,
  MeterProvider,
  type MetricData,
  MetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';

/**
 * The context manager an SDK for Node registers (`@opentelemetry/context-async-hooks`), in a few
 * lines: the active context follows async work through AsyncLocalStorage.
 */
export class AsyncContextManager implements ContextManager {
  readonly #storage = new AsyncLocalStorage<Context>();

  active(): Context {
    return this.#storage.getStore() ?? ROOT_CONTEXT;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    context: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.#storage.run(context, () => fn.call(thisArg, ...args));
  }

  bind<T>(context: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const run = (...args: unknown[]) => this.with(context, () => target(...args));
    return run as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.#storage.disable();
    return this;
  }
}

/** A tracer whose spans are kept in memory, exported as each one ends. */
export function inMemoryTracing() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  return { exporter, provider, tracer: provider.getTracer('turnlog') };
}

/** A reader collected on demand. */
class CollectingReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

/** A meter whose instruments are read on demand: each metric's data points by name. */
export function inMemoryMetrics() {
  const reader = new CollectingReader();
  const provider = new MeterProvider({ readers: [reader] });
  return {
    provider,
    meter: provider.getMeter('turnlog'),
    async collect(): Promise<Map<string, { metric: MetricData; points: DataPoint<unknown>[] }>> {
      const { resourceMetrics } = await reader.collect();
      const found = new Map<string, { metric: MetricData; points: DataPoint<unknown>[] }>();
      for (const scope of resourceMetrics.scopeMetrics) {
        for (const metric of scope.metrics) {
          found.set(metric.descriptor.name, {
            metric,
            points: metric.dataPoints as DataPoint<unknown>[],
          });
        }
      }
      return found;
    },
  };
}

/** A finished span as plain JSON (a child process writes these; tests compare them). */
export interface SpanRecord {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  startTime: [number, number];
  attributes: Record<string, unknown>;
  events: string[];
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[];
}

/** A finished span as a `SpanRecord`. */
export function spanRecord(span: ReadableSpan): SpanRecord {
  return {
    name: span.name,
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    parentSpanId: span.parentSpanContext?.spanId,
    startTime: [span.startTime[0], span.startTime[1]],
    attributes: { ...span.attributes },
    events: span.events.map((event) => event.name),
    links: span.links.map((link) => ({
      traceId: link.context.traceId,
      spanId: link.context.spanId,
      attributes: { ...link.attributes },
    })),
  };
}

/** A span in a test's words: its record, and its parent's name. */
export interface SpanView extends SpanRecord {
  parent: string | undefined;
}

/** Spans in start order, each naming its parent (or saying it was not exported). */
export function spanViews(spans: readonly (ReadableSpan | SpanRecord)[]): SpanView[] {
  const records = spans.map((span) => ('spanContext' in span ? spanRecord(span) : span));
  records.sort((a, b) =>
    a.startTime[0] === b.startTime[0]
      ? a.startTime[1] - b.startTime[1]
      : a.startTime[0] - b.startTime[0],
  );
  const byId = new Map(records.map((record) => [record.spanId, record]));
  return records.map((record) => ({
    ...record,
    parent:
      record.parentSpanId === undefined
        ? undefined
        : (byId.get(record.parentSpanId)?.name ?? `(not exported: ${record.parentSpanId})`),
  }));
}
