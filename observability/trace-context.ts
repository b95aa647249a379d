import type { TraceContext } from '../events/facts.ts';
import type { OtelApi, SpanContext } from './otel-types.ts';

/** A span's context as the log records it: W3C `traceparent` (version 00) and `tracestate`. */
export function toTraceContext(span: SpanContext): TraceContext {
  const flags = (span.traceFlags & 0xff).toString(16).padStart(2, '0');
  const tracestate = span.traceState?.serialize();
  return {
    traceparent: `00-${span.traceId}-${span.spanId}-${flags}`,
    ...(tracestate ? { tracestate } : {}),
  };
}

const traceparentPattern = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-|$)/;

/**
 * The remote span context a recorded trace context names; `undefined` for one that is not a valid
 * `traceparent` (a log edited by hand, a future version): the run's later spans then start a trace.
 */
export function fromTraceContext(api: OtelApi, recorded: TraceContext): SpanContext | undefined {
  const match = traceparentPattern.exec(recorded.traceparent);
  if (match === null || match[1] === 'ff') return undefined;
  const [, , traceId = '', spanId = '', flags = '00'] = match;
  const context: SpanContext = {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16),
    isRemote: true,
    ...(recorded.tracestate ? { traceState: api.createTraceState(recorded.tracestate) } : {}),
  };
  return api.isSpanContextValid(context) ? context : undefined;
}
