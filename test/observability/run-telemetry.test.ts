import { describe, expect, it } from 'vitest';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { Fact } from '../../events/facts.ts';
import { RunTelemetry, type SegmentRequest } from '../../observability/run-telemetry.ts';
import { createRuntime } from '../../runtime.ts';
import { InvalidArgumentError } from '../../runtime-errors.ts';
import { loadSampleLog } from '../events/sample-logs.ts';
import { inMemoryMetrics, inMemoryTracing, spanViews } from './otel-harness.ts';

const noTags = { hasTag: () => false };
const noSecrets = () => ({ readable: true as const, secrets: [] });

/**
 * The workers sample log before the takeover (the facts worker-web-2 read), and its recovery
 * sequence (`tool.indeterminate`, `run.recovered`).
 */
function takeoverFacts(): { before: Fact[]; recovery: Fact[] } {
  const facts = loadSampleLog('workers');
  const start = facts.findIndex((fact) => fact.type === 'tool.indeterminate');
  const end = facts.findIndex((fact) => fact.type === 'run.recovered');
  return { before: facts.slice(0, start), recovery: facts.slice(start, end + 1) };
}

function recoveredSegment(telemetry: RunTelemetry, workerId: string, facts: Fact[]) {
  const [first] = facts as [Fact];
  const request: SegmentRequest = {
    ids: { sessionId: first.sessionId, turnId: first.turnId, runId: first.runId },
    token: { workerId, leaseEpoch: 2 },
    start: 'recovered',
    facts,
    parent: undefined,
    secretsOf: noSecrets,
  };
  return telemetry.segment(request);
}

describe('RunTelemetry', () => {
  it('counts a recovery by another worker than the run’s last fact’s as a takeover, by the same one as a recovery only', async () => {
    const metrics = inMemoryMetrics();
    const telemetry = new RunTelemetry({ meter: metrics.meter }, { shared: true });
    await telemetry.ready();
    const { before, recovery } = takeoverFacts();
    // The log's last fact before the recovery was appended by worker-web-1.
    expect(before.at(-1)?.workerId).toBe('worker-web-1');
    for (const workerId of ['worker-web-2', 'worker-web-1']) {
      const segment = recoveredSegment(telemetry, workerId, before);
      for (const fact of recovery) segment?.fact(fact, noTags);
    }
    const found = await metrics.collect();
    expect(found.get('turnlog.recoveries')?.points.map((point) => point.value)).toStrictEqual([2]);
    expect(found.get('turnlog.takeovers')?.points.map((point) => point.value)).toStrictEqual([1]);
    telemetry.close();
  });

  it('counts the leases a renewal did not renew', async () => {
    const metrics = inMemoryMetrics();
    const telemetry = new RunTelemetry({ meter: metrics.meter }, { shared: true });
    await telemetry.ready();
    telemetry.renewalsMissed(3);
    telemetry.renewalsMissed(0);
    telemetry.renewalsMissed(1);
    const found = await metrics.collect();
    expect(
      found.get('turnlog.lease.renewals_missed')?.points.map((point) => point.value),
    ).toStrictEqual([4]);
    telemetry.close();
  });

  it('starts a trace of its own for a continued run whose log holds no trace context, or one that is not a traceparent', async () => {
    const { exporter, tracer } = inMemoryTracing();
    const telemetry = new RunTelemetry({ tracer }, { shared: true });
    await telemetry.ready();
    const { before } = takeoverFacts();
    const broken = before.map((fact) =>
      fact.type === 'run.started' ? { ...fact, trace: { traceparent: '00-zz-yy-01' } } : fact,
    );
    recoveredSegment(telemetry, 'worker-web-2', before)?.end('parked', false);
    recoveredSegment(telemetry, 'worker-web-2', broken)?.end('parked', false);
    const spans = spanViews(exporter.getFinishedSpans());
    expect(spans.map((span) => [span.name, span.parent, span.links])).toStrictEqual([
      ['invoke_agent', undefined, []],
      ['invoke_agent', undefined, []],
    ]);
    expect(spans[0]?.traceId).not.toBe(spans[1]?.traceId);
    telemetry.close();
  });

  it('keeps no segment and times no append when no SDK is registered (the API’s no-op tracer and meter)', async () => {
    const telemetry = new RunTelemetry({}, { shared: false });
    await telemetry.ready();
    const { before } = takeoverFacts();
    expect(recoveredSegment(telemetry, 'worker-web-2', before)).toBeUndefined();
    const store = { append: async () => ({ appended: [], lastSeq: 0 }) };
    expect(telemetry.appendsTo(store)).toBe(store);
    telemetry.close();
  });
});

describe('createRuntime({ telemetry })', () => {
  const model = scriptedModel([]);
  const refused = (telemetry: unknown) => {
    try {
      createRuntime({ model, telemetry } as never);
    } catch (error) {
      expect(InvalidArgumentError.isInstance(error)).toBe(true);
      return {
        message: (error as Error).message,
        argument: (error as InvalidArgumentError).argument,
      };
    }
    throw new Error('createRuntime took it');
  };

  it('names what is wrong inside the option, or that it is neither false nor an object', () => {
    expect(refused({ recordContent: 'yes' })).toStrictEqual({
      argument: 'telemetry.recordContent',
      message: 'createRuntime(): telemetry.recordContent must be true or false (got "yes").',
    });
    expect(refused(true)).toStrictEqual({
      argument: 'telemetry',
      message:
        'createRuntime(): telemetry must be false (no telemetry) or an object { tracer, meter, recordContent } (got true).',
    });
    expect(refused({ tracr: {} })).toStrictEqual({
      argument: 'telemetry.tracr',
      message:
        'createRuntime(): unknown option telemetry.tracr; the options are tracer, meter, recordContent. A misspelled option would otherwise be ignored.',
    });
    expect(refused({ tracer: {} })).toStrictEqual({
      argument: 'telemetry.tracer',
      message:
        "createRuntime(): telemetry.tracer must be an OpenTelemetry Tracer (trace.getTracer('…')) (got {}).",
    });
  });
});
