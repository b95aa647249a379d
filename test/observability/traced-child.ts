// A process that traces one run to its tool and is killed there (test/observability/
// recovery-trace.test.ts): the model is rate-limited once, then asks to send an invoice; the
// person allows it; the tool prints `executing` and never returns. Every span is written to
// `spansFile` as a JSON line the moment it ends (a SIGKILL loses only the spans still open).
// Usage: node test/observability/traced-child.ts '{ "dir": …, "spansFile": … }'
import { appendFileSync } from 'node:fs';
import {
  BasicTracerProvider,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { z } from 'zod';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import { createRuntime } from '../../runtime.ts';
import { lowdbStore } from '../../store/folder/lowdb-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { spanRecord } from './otel-harness.ts';

const { dir, spansFile } = JSON.parse(process.argv[2] ?? '{}') as {
  dir: string;
  spansFile: string;
};
const keepAlive = setInterval(() => {}, 60_000);

const fileExporter: SpanExporter = {
  export(spans: ReadableSpan[], done) {
    for (const span of spans) appendFileSync(spansFile, `${JSON.stringify(spanRecord(span))}\n`);
    done({ code: 0 }); // ExportResultCode.SUCCESS
  },
  async shutdown() {},
};
const provider = new BasicTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(fileExporter)],
});

const runtime = createRuntime({
  store: lowdbStore({ dir }),
  model: scriptedModel([
    { error: { status: 429, message: 'slow down', headers: { 'retry-after-ms': '1' } } },
    { toolCalls: [{ id: 'call_inv', name: 'sendInvoice', input: { customer: 'acme' } }] },
  ]),
  tools: {
    sendInvoice: defineTool({
      description: 'Sends an invoice.',
      inputSchema: z.object({ customer: z.string() }),
      permission: 'ask',
      execute: () => {
        process.stdout.write('executing\n');
        return new Promise(() => {});
      },
    }),
  },
  telemetry: { tracer: provider.getTracer('turnlog') },
});
const turn = await runtime.send({ sessionId: 's1', text: 'Invoice acme.' });
for await (const event of turn.events) {
  if (event.type === 'tool.permission.requested') break;
}
await runtime.decide({ sessionId: 's1', callId: 'call_inv', decision: 'allow' });
keepAlive.refresh();
