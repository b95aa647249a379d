import type { ModelStepEvent } from '../../adapters/model-adapter.ts';
import type { ProposedFact, ToolCallRecord } from '../../events/facts.ts';
import type { ProviderStepInput } from '../pure/actor-inputs.ts';
import { buildRequest } from './prepare-step-actor.ts';
import { limitRetryAfter } from './retry-timer-actor.ts';
import { fromTask, type RunServices, type ServicesOf } from './run-services.ts';
import { settleContext } from './settle-tool-actor.ts';

/** How long streamed output may wait before the partial snapshot slot is rewritten. */
const partialFlushMs = 200;

/**
 * The decision of each call of a completed step (validation, loop gate, permission), in call
 * order, judged on the log before the step, then the `tool.started` of the calls that start at
 * once (`CallSettler.decideStep`).
 */
function decideCalls(
  services: RunServices,
  input: ProviderStepInput,
  calls: readonly ToolCallRecord[],
): Promise<ProposedFact[]> {
  return services.callSettler.decideStep(calls, settleContext(services, input));
}

/**
 * The `providerStep` actor (state `requesting.streaming`): one `ModelAdapter.step()` with the
 * run's abort signal. Deltas stream to subscribers (and, throttled, into the store's partial
 * snapshot slot); the step ends with exactly one `step.completed` or `step.failed`, which the
 * driver commits before the machine sees it. A completed step's calls are decided first, and
 * their decisions, with the `tool.started` of the calls that start at once, share the write of
 * `step.completed`: the machine passes `settlingTools.deciding` into `running` within one
 * durable point. Output after the actor was stopped is dropped (I10).
 */
export function providerStepActor(servicesOf: ServicesOf) {
  return fromTask<ProviderStepInput>(servicesOf, async (services, input, signal) => {
    const { sessionId, runId, stepId, attempt } = input;
    const request = input.request ?? buildRequest(services);
    const step = services.adapter.step({
      ...request,
      abortSignal: AbortSignal.any([services.signal, signal]),
    });

    const partial = { runId, stepId, attempt, text: '', reasoning: '', truncated: false };
    let flushTimer: ReturnType<typeof setTimeout> | undefined;
    let saving: Promise<void> | undefined;
    const flush = () => {
      flushTimer = undefined;
      const snapshot = { ...partial };
      saving = (saving ?? Promise.resolve()).then(() =>
        services.store.savePartial(sessionId, snapshot).catch(() => {
          // The partial slot is best effort, for display after a crash; losing it loses nothing.
        }),
      );
    };
    const observe = (event: ModelStepEvent) => {
      if (event.type === 'text.delta') partial.text += event.text;
      else if (event.type === 'reasoning.delta') partial.reasoning += event.text;
      else return;
      flushTimer ??= setTimeout(flush, partialFlushMs);
    };

    try {
      for await (const event of step.events) {
        if (signal.aborted) break;
        observe(event);
        services.emit({ ...event, sessionId, runId, stepId });
      }
    } finally {
      if (flushTimer !== undefined) clearTimeout(flushTimer);
    }
    const completion = limitRetryAfter(await step.completion, services.limits);
    if (signal.aborted) return;
    const decisions =
      completion.type === 'step.completed'
        ? await decideCalls(services, input, completion.toolCalls)
        : [];
    if (signal.aborted) return;
    // One write: the response, every call's decision and the starts that follow at once (I5:
    // nothing runs before it is durable).
    await services.commitAll([{ ...completion, stepId }, ...decisions]);
    if (saving !== undefined) {
      await saving;
      await services.store.clearPartial(sessionId);
    }
  });
}
