import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { FactOf } from '../../events/facts.ts';
import { createRuntime } from '../../runtime.ts';
import { lowdbStore } from '../../store/folder/lowdb-store.ts';
import { addTool } from '../runtime/runtime-helpers.ts';
import { inMemoryTracing, type SpanRecord, spanViews } from './otel-harness.ts';

const childFile = fileURLToPath(new URL('./traced-child.ts', import.meta.url));

/** Runs the traced child until its tool executes, then SIGKILLs it. */
function runChildUntilExecuting(options: { dir: string; spansFile: string }): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [childFile, JSON.stringify(options)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const watchdog = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      if (stdout.includes('executing\n')) child.kill('SIGKILL');
    });
    child.on('exit', (_code, signal) => {
      clearTimeout(watchdog);
      if (signal === 'SIGKILL' && stdout.includes('executing\n')) resolve(stdout);
      else reject(new Error(`the traced child did not reach its tool: ${stdout}${stderr}`));
    });
  });
}

let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe('a run recovered in another process', () => {
  it('is one trace: the recovering process’s spans are children of the run’s first span, linked to the span before them', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'turnlog-recovery-trace-'));
    const spansFile = path.join(dir, 'spans.jsonl');
    const storeDir = path.join(dir, 'store');
    // Process A: a retried step, a permission ask, the person's allow, the tool running: killed.
    await runChildUntilExecuting({ dir: storeDir, spansFile });
    const exported = (await readFile(spansFile, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as SpanRecord);

    // Process B (this one): recover() finds the started call indeterminate; the person reports
    // it unknown; the model answers.
    const { exporter, tracer } = inMemoryTracing();
    const store = lowdbStore({ dir: storeDir });
    const runtime = createRuntime({
      store,
      model: scriptedModel([{ text: 'It may have been sent; check the invoices.' }]),
      tools: { sendInvoice: addTool().tool },
      telemetry: { tracer },
    });
    const [recovered] = await runtime.recover();
    expect(recovered).toMatchObject({ status: 'parked', indeterminate: ['call_inv'] });
    await runtime.decide({ sessionId: 's1', callId: 'call_inv', decision: 'report-unknown' });
    expect(recovered?.status === 'parked' && (await recovered.turn.done).status).toBe('completed');
    const facts = await runtime.facts('s1');
    await runtime.close();

    const spans = spanViews([...exported, ...exporter.getFinishedSpans()]);
    expect(spans.map(({ name, parent }) => [name, parent])).toStrictEqual([
      // A: the run's first span, ended when the run parked; its two attempts.
      ['invoke_agent', undefined],
      ['chat scripted-model', 'invoke_agent'],
      ['chat scripted-model', 'invoke_agent'],
      // (A's second span, rebuilt for the person's allow, and its tool's were open: lost.)
      // B: the recovery, parked on the indeterminate call; then the person's answer.
      ['invoke_agent', 'invoke_agent'],
      ['invoke_agent', 'invoke_agent'],
      ['chat scripted-model', 'invoke_agent'],
    ]);
    expect(new Set(spans.map((span) => span.traceId)).size).toBe(1);
    const [first, failed, asked, recovering, answered, last] = spans;
    expect(failed?.attributes).toMatchObject({
      'turnlog.step.attempt': 1,
      'error.type': 'rate_limit',
    });
    expect(asked?.attributes).toMatchObject({
      'turnlog.step.attempt': 2,
      'turnlog.step.outcome': 'completed',
    });
    expect(first?.attributes).toMatchObject({
      'turnlog.run.segment': 'started',
      'turnlog.run.segment_end': 'parked',
    });
    expect(first?.events).toStrictEqual(['turnlog.retry.due', 'turnlog.tool.permission.requested']);
    // Both of B's spans hang under the run's first span (run.started records it)…
    expect([recovering?.parentSpanId, answered?.parentSpanId]).toStrictEqual([
      first?.spanId,
      first?.spanId,
    ]);
    // …the recovery links to it, and the answer to the recovery (run.recovered records it).
    expect(recovering?.links).toStrictEqual([
      {
        traceId: first?.traceId,
        spanId: first?.spanId,
        attributes: { 'turnlog.link': 'continues:recovered' },
      },
    ]);
    expect(answered?.links).toStrictEqual([
      {
        traceId: first?.traceId,
        spanId: recovering?.spanId,
        attributes: { 'turnlog.link': 'continues:resumed' },
      },
    ]);
    expect(recovering?.attributes).toMatchObject({
      'turnlog.run.segment': 'recovered',
      'turnlog.run.segment_end': 'parked',
      'turnlog.state': 'awaitingPermission',
    });
    expect(recovering?.events).toStrictEqual([
      'turnlog.tool.indeterminate',
      'turnlog.run.recovered',
    ]);
    expect(answered?.events).toStrictEqual([
      'turnlog.tool.permission.decided',
      'turnlog.tool.settled',
    ]);
    expect(answered?.attributes).toMatchObject({
      'turnlog.run.segment': 'resumed',
      'turnlog.run.status': 'completed',
    });
    expect(last?.parentSpanId).toBe(answered?.spanId);

    // The log holds both spans' contexts: the first in run.started, the recovery's in run.recovered.
    const started = facts.find((fact) => fact.type === 'run.started') as FactOf<'run.started'>;
    const recoveredFact = facts.find(
      (fact) => fact.type === 'run.recovered',
    ) as FactOf<'run.recovered'>;
    expect(started.trace?.traceparent).toBe(`00-${first?.traceId}-${first?.spanId}-01`);
    expect(recoveredFact.trace?.traceparent).toBe(`00-${first?.traceId}-${recovering?.spanId}-01`);
  });
});
