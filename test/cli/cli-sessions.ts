import { z } from 'zod';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { EventStore } from '../../store/event-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { isFactOf, testRuntime, until } from '../runtime/runtime-helpers.ts';

/** The tool the planted sessions use: an invoice a person must allow. */
export function sendInvoiceTool(
  execute = (input: { customer: string }) => `sent to ${input.customer}`,
) {
  return defineTool({
    description: 'Sends an invoice.',
    inputSchema: z.object({ customer: z.string() }),
    permission: 'ask',
    execute,
  });
}

/**
 * Plants one session of each kind an operator looks for, through a real runtime on `store`:
 * - `s-awaiting`: the model asked for `sendInvoice` (call `call_inv`); a person owes the decision;
 * - `s-done`: a run that completed with "Hello.";
 * - `s-failed`: a run the provider refused (400), ended `failed`;
 * - `s-running`: a run whose provider step was in flight when its process went away.
 * Closes the runtime (and the store) when done.
 */
export async function plantSessions(store: EventStore): Promise<void> {
  const model = scriptedModel((_call, index) => {
    const script = [
      { toolCalls: [{ id: 'call_inv', name: 'sendInvoice', input: { customer: 'acme' } }] },
      { text: 'Hello.' },
      { error: { status: 400, message: 'bad request' } },
      { stall: true },
    ];
    return script[index] ?? { text: 'unexpected' };
  });
  const runtime = testRuntime(store, { model, tools: { sendInvoice: sendInvoiceTool() } });
  const awaiting = await runtime.send({ sessionId: 's-awaiting', text: 'Invoice acme.' });
  await until(awaiting, isFactOf('tool.permission.requested'));
  const done = await runtime.send({ sessionId: 's-done', text: 'Say hello.' });
  await done.done;
  const failed = await runtime.send({ sessionId: 's-failed', text: 'Fail.' });
  await failed.done;
  const running = await runtime.send({ sessionId: 's-running', text: 'Wait.' });
  await until(running, isFactOf('step.started'));
  await runtime.close();
}
