import { z } from 'zod';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { RuntimeOptions } from '../../runtime.ts';
import type { EventStore } from '../../store/event-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import type { RuntimeTools } from '../../tools/provider-tool.ts';
import type { PermissionPolicy } from '../../tools/tool.ts';
import { isFactOf, testRuntime, until } from '../runtime/runtime-helpers.ts';

/** What the application's tools did, in order (a replay must leave it empty). */
export const sideEffects: string[] = [];

/** The tools of the recorded application: a lookup (allowed) and an invoice a person allows. */
export function invoiceTools(
  changes: { renamed?: boolean; schemaChanged?: boolean } = {},
): RuntimeTools {
  const lookupCustomer = defineTool({
    description: 'Finds a customer.',
    inputSchema: z.object({ name: z.string() }),
    execute: (input) => {
      sideEffects.push(`lookup ${input.name}`);
      return { id: 'c-7', name: input.name };
    },
  });
  const invoiceSchema = changes.schemaChanged
    ? z.object({ customerId: z.string(), amountCents: z.number() })
    : z.object({ customerId: z.string() });
  const sendInvoice = defineTool({
    description: 'Sends an invoice.',
    inputSchema: invoiceSchema,
    permission: 'ask',
    execute: (input: { customerId: string }) => {
      sideEffects.push(`invoice ${input.customerId}`);
      return `invoice sent to ${input.customerId}`;
    },
  });
  return changes.renamed
    ? { lookupCustomer, issueInvoice: sendInvoice }
    : { lookupCustomer, sendInvoice };
}

/** The model's responses of the recorded session (a replay never asks it). */
export function invoiceModel() {
  return scriptedModel([
    { toolCalls: [{ id: 'call_look', name: 'lookupCustomer', input: { name: 'acme' } }] },
    { toolCalls: [{ id: 'call_inv', name: 'sendInvoice', input: { customerId: 'c-7' } }] },
    { text: 'Invoice sent to acme.' },
  ]);
}

/** A policy that now denies every invoice. */
export const denyInvoices: PermissionPolicy = ({ name }) =>
  name === 'sendInvoice'
    ? { verdict: 'deny', reason: 'invoices are frozen' }
    : { verdict: 'allow' };

/** The runtime options of the application as it was recorded (the --runtime module's). */
export function recordedOptions(): RuntimeOptions {
  return { model: invoiceModel(), tools: invoiceTools(), system: 'You send invoices.' };
}

/**
 * Records session `s-invoice` on `store`: the model looks acme up, asks to send an invoice, a
 * person allows it, the model answers. With `park`, the person never answers: the run stays
 * waiting for the decision on `call_inv`.
 */
export async function recordInvoiceSession(store: EventStore, options: { park?: boolean } = {}) {
  const runtime = testRuntime(store, recordedOptions());
  const turn = await runtime.send({ sessionId: 's-invoice', text: 'Invoice acme.' });
  await until(turn, isFactOf('tool.permission.requested'));
  if (options.park !== true) {
    await runtime.decide({ sessionId: 's-invoice', callId: 'call_inv', decision: 'allow' });
    await turn.done;
  }
  const facts = await runtime.facts('s-invoice');
  await runtime.close();
  return facts;
}
