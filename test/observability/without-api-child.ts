// Runs one run with a tool under a registered OpenTelemetry SDK (global tracer and meter
// providers, in-memory exporters) and prints what was exported, as JSON. With `hide`, a module
// hook makes `@opentelemetry/api` impossible to resolve for turnlog's own files (the SDK and
// this file still load it), as for an app that never installed it.
// Usage: node test/observability/without-api-child.ts hide|show
import { registerHooks } from 'node:module';

const hide = process.argv[2] === 'hide';
if (hide) {
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const importer = context.parentURL ?? '';
      if (
        specifier.startsWith('@opentelemetry/') &&
        !importer.includes('/node_modules/') &&
        !importer.includes('/test/')
      ) {
        throw Object.assign(
          new Error(`Cannot find package '${specifier}' imported from ${importer}`),
          {
            code: 'ERR_MODULE_NOT_FOUND',
          },
        );
      }
      return nextResolve(specifier, context);
    },
  });
}

const { metrics, trace } = await import('@opentelemetry/api');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = await import(
  '@opentelemetry/sdk-trace-base'
);
const { inMemoryMetrics } = await import('./otel-harness.ts');
const { scriptedModel } = await import('../../adapters/scripted-model.ts');
const { createRuntime } = await import('../../runtime.ts');
const { memoryStore } = await import('../../store/memory/memory-store.ts');
const { addTool } = await import('../runtime/runtime-helpers.ts');

const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(
  new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
);
const meters = inMemoryMetrics();
metrics.setGlobalMeterProvider(meters.provider);

const store = memoryStore();
const runtime = createRuntime({
  store,
  model: scriptedModel([{ toolCalls: [{ name: 'add', input: { a: 1, b: 2 } }] }, { text: '3' }]),
  tools: { add: addTool().tool },
});
const turn = await runtime.send({ sessionId: 's1', text: 'Add 1 and 2.' });
const result = await turn.done;
const [started] = await store.read('s1');
await runtime.close();
const collected = await meters.collect();
process.stdout.write(
  `${JSON.stringify({
    status: result.status,
    spans: exporter.getFinishedSpans().map((span) => span.name),
    metrics: [...collected.keys()],
    traceRecorded: started !== undefined && 'trace' in started,
    fingerprintRecorded: started !== undefined && 'fingerprint' in started,
  })}\n`,
);
