import { beforeAll, describe, expect, it } from 'vitest';
import type { Fact } from '../../events/facts.ts';
import { replaySession } from '../../operations/replay-session.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import {
  denyInvoices,
  invoiceTools,
  recordedOptions,
  recordInvoiceSession,
  sideEffects,
} from './invoice-session.ts';

let facts: Fact[];

beforeAll(async () => {
  facts = await recordInvoiceSession(memoryStore());
  sideEffects.length = 0;
});

describe('replaySession', () => {
  it('finds no difference when the code is the one that recorded the session, and runs no tool', async () => {
    const report = await replaySession({ facts, runtime: recordedOptions() });
    expect(report.differences).toEqual([]);
    expect(report.runs).toHaveLength(1);
    expect(report.runs[0]?.replayed.status).toBe('completed');
    expect(report.runs[0]?.replayed.requests).toHaveLength(3);
    expect(
      report.runs[0]?.replayed.calls.map((call) => [
        call.callId,
        call.asked,
        call.decision,
        call.executed,
        call.outcome,
      ]),
    ).toEqual([
      ['call_look', false, { decision: 'allow', by: 'policy' }, true, 'success'],
      ['call_inv', true, { decision: 'allow', by: 'user' }, true, 'success'],
    ]);
    expect(sideEffects).toEqual([]);
  });

  it('finds a policy that now denies: the call is decided deny by the policy, not run, and the next request differs', async () => {
    const report = await replaySession({
      facts,
      runtime: { ...recordedOptions(), policy: denyInvoices },
    });
    expect(
      report.differences.map((difference) => [
        difference.kind,
        difference.callId ?? difference.request,
      ]),
    ).toEqual([
      ['request', 2],
      ['asked', 'call_inv'],
      ['decision', 'call_inv'],
      ['executed', 'call_inv'],
      ['outcome', 'call_inv'],
      ['states', undefined],
    ]);
    expect(report.differences[2]?.message).toBe(
      'call sendInvoice call_inv: allow by user → deny by policy',
    );
    expect(report.differences[4]?.message).toBe(
      'call sendInvoice call_inv: settled success → denied',
    );
    expect(sideEffects).toEqual([]);
  });

  it('finds a renamed tool: every request shows other tools, and the call of the old name no longer runs', async () => {
    const report = await replaySession({
      facts,
      runtime: { ...recordedOptions(), tools: invoiceTools({ renamed: true }) },
    });
    const [request] = report.differences;
    expect(request).toMatchObject({ kind: 'request', request: 0 });
    expect(request?.message).toBe(
      'request 1 differs (tools lookupCustomer, sendInvoice → lookupCustomer, issueInvoice); every later request differs with it',
    );
    const inv = report.differences.filter((difference) => difference.callId === 'call_inv');
    expect(inv.map((difference) => difference.kind)).toEqual([
      'asked',
      'decision',
      'executed',
      'outcome',
    ]);
    expect(report.runs[0]?.replayed.calls[1]?.outcome).not.toBe('success');
  });

  it('finds a changed input schema: the recorded input is now invalid and the call does not run', async () => {
    const report = await replaySession({
      facts,
      runtime: { ...recordedOptions(), tools: invoiceTools({ schemaChanged: true }) },
    });
    expect(report.differences[0]).toMatchObject({ kind: 'request', request: 0 });
    expect(report.differences[0]?.message).toContain(
      'request 1 differs (the same messages and tools by count and name',
    );
    const outcome = report.differences.find((difference) => difference.kind === 'outcome');
    expect(outcome?.message).toBe('call sendInvoice call_inv: settled success → invalid');
  });

  it('stops where the recording waits for a person, with no difference', async () => {
    const parked = await recordInvoiceSession(memoryStore(), { park: true });
    const report = await replaySession({ facts: parked, runtime: recordedOptions() });
    expect(report.differences).toEqual([]);
    expect(report.runs[0]?.replayed.status).toBe('unfinished');
    expect(report.runs[0]?.replayed.states.at(-1)).toBe('awaitingPermission');
  });
});
