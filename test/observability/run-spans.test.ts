import { context, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { FactOf } from '../../events/facts.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { isFactOf, testRuntime, until } from '../runtime/runtime-helpers.ts';
import {
  AsyncContextManager,
  inMemoryMetrics,
  inMemoryTracing,
  spanViews,
} from './otel-harness.ts';

const contextManager = new AsyncContextManager();
beforeAll(() => {
  context.setGlobalContextManager(contextManager);
});
afterAll(() => {
  context.disable();
});

/** A model that is rate-limited once, asks to send an invoice, then answers. */
function invoiceModel() {
  return scriptedModel([
    { error: { status: 429, message: 'slow down', headers: { 'retry-after-ms': '1' } } },
    {
      toolCalls: [
        { id: 'call_inv', name: 'sendInvoice', input: { customer: 'acme', key: 'sk-secret-42' } },
      ],
      usage: { inputTokens: 11, outputTokens: 7 },
    },
    { text: 'Sent.', usage: { inputTokens: 20, outputTokens: 2 } },
  ]);
}

function sendInvoice() {
  return defineTool({
    description: 'Sends an invoice.',
    inputSchema: z.object({ customer: z.string(), key: z.string() }),
    permission: 'ask',
    secrets: (input) => [input.key],
    execute: (input) => `invoice sent to ${input.customer} with ${input.key}`,
  });
}

describe('a traced run', () => {
  it('is one trace under the caller’s span: the run’s span, a chat span per attempt, the tool’s span after the person’s decision', async () => {
    const { exporter, tracer } = inMemoryTracing();
    const runtime = testRuntime(memoryStore(), {
      model: invoiceModel(),
      tools: { sendInvoice: sendInvoice() },
      telemetry: { tracer },
    });
    const request = tracer.startSpan('POST /chat');
    const turn = await context.with(trace.setSpan(context.active(), request), () =>
      runtime.send({ sessionId: 's1', text: 'Invoice acme.' }),
    );
    await until(turn, isFactOf('tool.permission.requested'));
    await runtime.decide({ sessionId: 's1', callId: 'call_inv', decision: 'allow' });
    expect((await turn.done).status).toBe('completed');
    request.end();
    await runtime.close();

    const spans = spanViews(exporter.getFinishedSpans());
    expect(spans.map(({ name, parent }) => [name, parent])).toStrictEqual([
      ['POST /chat', undefined],
      ['invoke_agent', 'POST /chat'],
      ['chat scripted-model', 'invoke_agent'],
      ['chat scripted-model', 'invoke_agent'],
      ['invoke_agent', 'invoke_agent'],
      ['execute_tool sendInvoice', 'invoke_agent'],
      ['chat scripted-model', 'invoke_agent'],
    ]);
    expect(new Set(spans.map((span) => span.traceId)).size).toBe(1);
    const [, first, failed, asked, resumed, tool, last] = spans as [never, ...typeof spans];
    // The resumed run's span is the first one's child (from run.started) and links to it.
    expect(resumed?.parent).toBe('invoke_agent');
    expect(resumed?.parentSpanId).toBe(first?.spanId);
    expect(resumed?.links).toStrictEqual([
      {
        traceId: first?.traceId,
        spanId: first?.spanId,
        attributes: { 'turnlog.link': 'continues:resumed' },
      },
    ]);
    expect(tool?.parent).toBe('invoke_agent');
    expect(first?.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.conversation.id': 's1',
      'turnlog.session.id': 's1',
      'turnlog.run.id': 'run_1',
      'turnlog.run.segment': 'started',
      'turnlog.run.segment_end': 'parked',
      'turnlog.state': 'awaitingPermission',
    });
    expect(first?.events).toStrictEqual(['turnlog.retry.due', 'turnlog.tool.permission.requested']);
    expect(failed?.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'scripted',
      'gen_ai.request.model': 'scripted-model',
      'turnlog.step.attempt': 1,
      'turnlog.step.outcome': 'failed',
      'error.type': 'rate_limit',
      'turnlog.step.retryable': true,
    });
    expect(asked?.attributes).toMatchObject({
      'turnlog.step.attempt': 2,
      'turnlog.step.outcome': 'completed',
      'gen_ai.usage.input_tokens': 11,
      'gen_ai.usage.output_tokens': 7,
      'gen_ai.response.finish_reasons': ['tool-calls'],
    });
    expect(asked?.attributes['turnlog.step.id']).toBe(failed?.attributes['turnlog.step.id']);
    expect(resumed?.attributes).toMatchObject({
      'turnlog.run.segment': 'resumed',
      'turnlog.run.segment_end': 'ended',
      'turnlog.run.status': 'completed',
      'turnlog.run.reason': 'end_turn',
      'turnlog.state': 'terminal',
    });
    expect(resumed?.events).toStrictEqual(['turnlog.tool.permission.decided']);
    expect(tool?.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'sendInvoice',
      'gen_ai.tool.call.id': 'call_inv',
      'turnlog.tool.outcome': 'success',
    });
    expect(last?.attributes).toMatchObject({
      'turnlog.step.attempt': 1,
      'gen_ai.usage.output_tokens': 2,
    });
    // Content is off by default: no prompt, output, argument or result is recorded.
    const recorded = JSON.stringify(spans.map((span) => span.attributes));
    expect(recorded).not.toContain('acme');
    expect(recorded).not.toContain('Invoice acme');
  });

  it('records prompts and outputs only when asked, with the tool’s secrets redacted', async () => {
    const { exporter, tracer } = inMemoryTracing();
    const runtime = testRuntime(memoryStore(), {
      model: invoiceModel(),
      tools: { sendInvoice: sendInvoice() },
      system: 'You bill customers.',
      telemetry: { tracer, recordContent: true },
    });
    const turn = await runtime.send({ sessionId: 's1', text: 'Invoice acme.' });
    await until(turn, isFactOf('tool.permission.requested'));
    await runtime.decide({ sessionId: 's1', callId: 'call_inv', decision: 'allow' });
    await turn.done;
    await runtime.close();

    const spans = spanViews(exporter.getFinishedSpans());
    const byName = (name: string, index = 0) => spans.filter((span) => span.name === name)[index];
    expect(byName('invoke_agent')?.attributes).toMatchObject({
      'gen_ai.input.messages': JSON.stringify([
        { role: 'user', parts: [{ type: 'text', content: 'Invoice acme.' }] },
      ]),
      'gen_ai.system_instructions': JSON.stringify([
        { type: 'text', content: 'You bill customers.' },
      ]),
    });
    expect(byName('chat scripted-model', 1)?.attributes['gen_ai.output.messages']).toBe(
      JSON.stringify([
        {
          role: 'assistant',
          parts: [
            {
              type: 'tool_call',
              id: 'call_inv',
              name: 'sendInvoice',
              arguments: { customer: 'acme', key: '[redacted]' },
            },
          ],
          finish_reason: 'tool-calls',
        },
      ]),
    );
    expect(byName('execute_tool sendInvoice')?.attributes).toMatchObject({
      'gen_ai.tool.call.arguments': '{"customer":"acme","key":"[redacted]"}',
      'gen_ai.tool.call.result': 'invoice sent to acme with [redacted]',
    });
    expect(byName('chat scripted-model', 2)?.attributes['gen_ai.output.messages']).toBe(
      JSON.stringify([
        { role: 'assistant', parts: [{ type: 'text', content: 'Sent.' }], finish_reason: 'stop' },
      ]),
    );
    expect(JSON.stringify(spans.map((span) => span.attributes))).not.toContain('sk-secret-42');
  });

  it('records the first span’s trace context in run.started, and the tools, model and prompt it started with', async () => {
    const { tracer, exporter } = inMemoryTracing();
    const store = memoryStore();
    const runtime = testRuntime(store, {
      model: invoiceModel(),
      tools: { sendInvoice: sendInvoice() },
      system: 'You bill customers.',
      telemetry: { tracer },
    });
    const turn = await runtime.send({ sessionId: 's1', text: 'Invoice acme.' });
    await until(turn, isFactOf('tool.permission.requested'));
    const started = (await store.read('s1'))[0] as FactOf<'run.started'>;
    await runtime.close();
    const span = exporter.getFinishedSpans().find((candidate) => candidate.name === 'invoke_agent');
    const { traceId, spanId } = span?.spanContext() ?? {};
    expect(started.trace).toStrictEqual({ traceparent: `00-${traceId}-${spanId}-01` });
    expect(started.fingerprint).toStrictEqual({
      tools: [{ name: 'sendInvoice', inputSchemaHash: expect.stringMatching(/^sha256:/) }],
      provider: 'scripted',
      modelId: 'scripted-model',
      systemHash: expect.stringMatching(/^sha256:/),
    });
  });
});

describe('metrics', () => {
  it('count steps, retries, tokens and tool durations, and the runs by state', async () => {
    const metrics = inMemoryMetrics();
    const runtime = testRuntime(memoryStore(), {
      model: invoiceModel(),
      tools: { sendInvoice: sendInvoice() },
      telemetry: { meter: metrics.meter },
    });
    const turn = await runtime.send({ sessionId: 's1', text: 'Invoice acme.' });
    await until(turn, isFactOf('tool.permission.requested'));
    const parked = await metrics.collect();
    expect(
      parked.get('turnlog.runs')?.points.map((point) => [point.attributes, point.value]),
    ).toStrictEqual([
      [{ 'turnlog.run.state': 'running' }, 0],
      [{ 'turnlog.run.state': 'parked' }, 0],
      [{ 'turnlog.run.state': 'waiting_for_person' }, 1],
    ]);
    await runtime.decide({ sessionId: 's1', callId: 'call_inv', decision: 'allow' });
    await turn.done;
    const found = await metrics.collect();
    await runtime.close();
    const sum = (name: string) =>
      found.get(name)?.points.map((point) => [point.attributes, point.value]);
    expect(sum('turnlog.steps')).toStrictEqual([
      [
        {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': 'scripted',
          'gen_ai.request.model': 'scripted-model',
          'turnlog.step.outcome': 'failed',
          'error.type': 'rate_limit',
        },
        1,
      ],
      [
        {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': 'scripted',
          'gen_ai.request.model': 'scripted-model',
          'turnlog.step.outcome': 'completed',
        },
        2,
      ],
    ]);
    expect(sum('turnlog.retries')).toStrictEqual([[{}, 1]]);
    const histogram = (name: string) =>
      found
        .get(name)
        ?.points.map((point) => [
          point.attributes,
          (point.value as { count: number; sum: number }).count,
          (point.value as { sum: number }).sum,
        ]);
    expect(histogram('gen_ai.client.token.usage')).toStrictEqual([
      [
        {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': 'scripted',
          'gen_ai.request.model': 'scripted-model',
          'gen_ai.token.type': 'input',
        },
        2,
        31,
      ],
      [
        {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': 'scripted',
          'gen_ai.request.model': 'scripted-model',
          'gen_ai.token.type': 'output',
        },
        2,
        9,
      ],
    ]);
    expect(histogram('gen_ai.client.operation.duration')?.map(([, count]) => count)).toStrictEqual([
      1, 2,
    ]);
    expect(
      histogram('turnlog.tool.duration')?.map(([attributes, count]) => [attributes, count]),
    ).toStrictEqual([
      [{ 'gen_ai.tool.name': 'sendInvoice', 'turnlog.tool.outcome': 'success' }, 1],
    ]);
    // Appends: run.started, step.started ×2, step.failed, retry.due, the response with the ask,
    // the decision, tool.started, tool.settled, step.started, step.completed with run.ended.
    expect(histogram('turnlog.append.duration')?.[0]?.[1]).toBe(11);
    expect(sum('turnlog.runs')).toStrictEqual([
      [{ 'turnlog.run.state': 'running' }, 0],
      [{ 'turnlog.run.state': 'parked' }, 0],
      [{ 'turnlog.run.state': 'waiting_for_person' }, 0],
    ]);
  });
});
