import { describe, expect, it } from 'vitest';
import type { Fact, NewFact } from '../../events/facts.ts';
import { checkDeploy } from '../../operations/deploy-check.ts';
import { createRuntime, type RuntimeOptions } from '../../runtime.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import {
  denyInvoices,
  invoiceTools,
  recordedOptions,
  recordInvoiceSession,
} from './invoice-session.ts';

/** A store holding the parked invoice session (waiting for a person to allow `call_inv`). */
async function parkedStore(edit: (facts: Fact[]) => Fact[] = (facts) => facts) {
  const facts = edit(await recordInvoiceSession(memoryStore(), { park: true }));
  const store = memoryStore();
  await store.append(
    's-invoice',
    facts.map(({ seq: _seq, ...fact }) => fact as NewFact),
  );
  return store;
}

function fingerprintOf(options: RuntimeOptions) {
  return createRuntime({ ...options, store: memoryStore() }).fingerprint();
}

describe('checkDeploy', () => {
  it('names no run when the code is the one that parked it', async () => {
    const report = await checkDeploy({
      store: await parkedStore(),
      fingerprint: fingerprintOf(recordedOptions()),
    });
    expect(report).toEqual({ checked: 1, blocked: [], differences: {} });
  });

  it('names the parked run whose pending call’s tool was renamed away', async () => {
    const report = await checkDeploy({
      store: await parkedStore(),
      fingerprint: fingerprintOf({ ...recordedOptions(), tools: invoiceTools({ renamed: true }) }),
    });
    expect(report.checked).toBe(1);
    expect(report.blocked).toHaveLength(1);
    expect(report.blocked[0]).toMatchObject({
      sessionId: 's-invoice',
      runId: 'run_1',
      state: 'awaitingPermission',
    });
    expect(report.blocked[0]?.blockers).toEqual([
      {
        kind: 'tool-missing',
        callId: 'call_inv',
        name: 'sendInvoice',
        message:
          'call call_inv of tool sendInvoice is still to run, and this runtime has no tool sendInvoice',
      },
    ]);
    expect(report.blocked[0]?.differences.map((difference) => difference.kind)).toEqual([
      'tool-removed',
      'tool-added',
    ]);
  });

  it('names the parked run whose pending call’s input schema changed', async () => {
    const report = await checkDeploy({
      store: await parkedStore(),
      fingerprint: fingerprintOf({
        ...recordedOptions(),
        tools: invoiceTools({ schemaChanged: true }),
      }),
    });
    expect(
      report.blocked[0]?.blockers.map((blocker) => [
        blocker.kind,
        'callId' in blocker && blocker.callId,
      ]),
    ).toEqual([['tool-schema-changed', 'call_inv']]);
  });

  it('counts what differs in runs it can continue (a policy is not in the fingerprint: replay finds it)', async () => {
    const report = await checkDeploy({
      store: await parkedStore(),
      fingerprint: fingerprintOf({
        ...recordedOptions(),
        system: 'You send invoices, politely.',
        policy: denyInvoices,
      }),
    });
    expect(report).toEqual({ checked: 1, blocked: [], differences: { 'system-changed': 1 } });
  });

  it('names a run begun by a newer turn machine, which this one cannot replay', async () => {
    const store = await parkedStore((facts) =>
      facts.map((fact) =>
        fact.type === 'run.started' ? { ...fact, machineVersion: '999' } : fact,
      ),
    );
    const report = await checkDeploy({ store, fingerprint: fingerprintOf(recordedOptions()) });
    expect(report.blocked[0]?.blockers).toHaveLength(1);
    expect(report.blocked[0]?.blockers[0]?.kind).toBe('cannot-replay');
    expect(report.blocked[0]?.blockers[0]?.message).toContain(
      'was begun by turn machine version 999, newer than',
    );
  });
});
