// Traces one run end to end and sends its spans to an OpenTelemetry collector or viewer over
// OTLP/HTTP (JSON), for the README's screenshot (docs/trace-sideseat.png). The run: the model is
// rate-limited once, asks to send an invoice, the person allows it; the runtime is closed while
// the tool runs (as a deploy would), a second runtime recovers the run, the person reports the
// call's outcome unknown, and the model answers. Two runtimes, one trace.
//
// Usage: node scripts/trace-example.ts [endpoint]   (default http://127.0.0.1:4318/v1/traces)
// With SideSeat (npm install sideseat; npx sideseat start --no-auth --port 5388):
//   node scripts/trace-example.ts http://127.0.0.1:5388/otel/default/v1/traces
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  BasicTracerProvider,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { z } from 'zod';
import { scriptedModel } from '../adapters/scripted-model.ts';
import { createRuntime } from '../runtime.ts';
import { lowdbStore } from '../store/folder/lowdb-store.ts';
import { defineTool } from '../tools/define-tool.ts';

const endpoint = process.argv[2] ?? 'http://127.0.0.1:4318/v1/traces';

/** One OTLP attribute value. */
function otlpValue(value: unknown): Record<string, unknown> {
  if (Array.isArray(value)) return { arrayValue: { values: value.map(otlpValue) } };
  if (typeof value === 'boolean') return { boolValue: value };
  if (typeof value === 'number') {
    return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  }
  return { stringValue: String(value) };
}

function otlpAttributes(attributes: Record<string, unknown> = {}) {
  return Object.entries(attributes).map(([key, value]) => ({ key, value: otlpValue(value) }));
}

const nanos = ([seconds, nanoseconds]: [number, number]) =>
  (BigInt(seconds) * 1_000_000_000n + BigInt(nanoseconds)).toString();

/** A span in OTLP's JSON encoding. */
function otlpSpan(span: ReadableSpan) {
  return {
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    ...(span.parentSpanContext ? { parentSpanId: span.parentSpanContext.spanId } : {}),
    name: span.name,
    kind: span.kind + 1, // the API's INTERNAL is 0; OTLP's SPAN_KIND_INTERNAL is 1
    startTimeUnixNano: nanos(span.startTime),
    endTimeUnixNano: nanos(span.endTime),
    attributes: otlpAttributes(span.attributes),
    events: span.events.map((event) => ({
      timeUnixNano: nanos(event.time),
      name: event.name,
      attributes: otlpAttributes(event.attributes),
    })),
    links: span.links.map((link) => ({
      traceId: link.context.traceId,
      spanId: link.context.spanId,
      attributes: otlpAttributes(link.attributes),
    })),
    status: {
      code: span.status.code,
      ...(span.status.message ? { message: span.status.message } : {}),
    },
  };
}

/** Sends spans as they end: `POST endpoint` with OTLP/JSON. */
const otlpExporter: SpanExporter = {
  export(spans, done) {
    const body = {
      resourceSpans: [
        {
          resource: { attributes: otlpAttributes({ 'service.name': 'invoice-agent' }) },
          scopeSpans: [{ scope: { name: 'turnlog' }, spans: spans.map(otlpSpan) }],
        },
      ],
    };
    fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then(
      (response) => done({ code: response.ok ? 0 : 1 }),
      () => done({ code: 1 }),
    );
  },
  async shutdown() {},
};

const provider = new BasicTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(otlpExporter)],
});
const tracer = provider.getTracer('turnlog');
const dir = await mkdtemp(path.join(tmpdir(), 'turnlog-trace-example-'));
let started: () => void = () => {};
const toolRunning = new Promise<void>((resolve) => {
  started = resolve;
});
const sendInvoice = defineTool({
  description: 'Sends an invoice to a customer.',
  inputSchema: z.object({ customer: z.string(), amount: z.number() }),
  permission: 'ask',
  execute: (_input, { signal }) => {
    started();
    return new Promise((_resolve, reject) =>
      signal.addEventListener('abort', () => reject(signal.reason)),
    );
  },
});

const first = createRuntime({
  store: lowdbStore({ dir }),
  model: scriptedModel([
    { error: { status: 429, message: 'Rate limited', headers: { 'retry-after-ms': '300' } } },
    {
      text: 'Sending the invoice.',
      toolCalls: [
        { id: 'call_inv', name: 'sendInvoice', input: { customer: 'acme', amount: 120 } },
      ],
      usage: { inputTokens: 412, outputTokens: 38 },
    },
  ]),
  tools: { sendInvoice },
  system: 'You bill customers.',
  telemetry: { tracer, recordContent: true },
});
const turn = await first.send({ sessionId: 'invoices-42', text: 'Send acme its invoice for 120.' });
for await (const event of turn.events) if (event.type === 'tool.permission.requested') break;
await first.decide({ sessionId: 'invoices-42', callId: 'call_inv', decision: 'allow' });
await toolRunning;
await first.close(); // the deploy: the run stays unfinished in the log

const second = createRuntime({
  store: lowdbStore({ dir }),
  model: scriptedModel([
    {
      text: 'The invoice may or may not have gone out; please check before sending it again.',
      usage: { inputTokens: 530, outputTokens: 21 },
    },
  ]),
  tools: { sendInvoice },
  system: 'You bill customers.',
  telemetry: { tracer, recordContent: true },
});
const [recovered] = await second.recover();
await second.decide({ sessionId: 'invoices-42', callId: 'call_inv', decision: 'report-unknown' });
if (recovered?.status === 'parked') console.log((await recovered.turn.done).status);
await second.close();
await provider.forceFlush();
await rm(dir, { recursive: true, force: true });
console.log(`sent the run's spans to ${endpoint}`);
