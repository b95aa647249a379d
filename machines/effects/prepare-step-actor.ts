import type { PreparedRequest, PrepareStepInput } from '../pure/actor-inputs.ts';
import { estimateRequestTokens, outputReserve } from '../pure/estimate-tokens.ts';
import { hasTokenBudget } from '../pure/turn-context.ts';
import { fromTask, type RunServices, type ServicesOf } from './run-services.ts';

/**
 * Builds the next request from the log alone (I6): the history projection (the run's projection
 * reads only the facts since the last request), the system prompt, the tools.
 */
export function buildRequest(services: RunServices): PreparedRequest {
  const messages = services.history.project(services.facts(), {
    provider: services.adapter.provider,
  });
  return {
    ...(services.system === undefined ? {} : { system: services.system }),
    messages,
    tools: services.toolDefinitions,
    ...requestLimits(services.limits),
    ...requestSettings(services.settings),
  };
}

/** The run's settings as a request carries them: sampling apart from provider options. */
export function requestSettings(settings: RunServices['settings']) {
  const { providerOptions, ...sampling } = settings ?? {};
  return {
    ...(Object.keys(sampling).length === 0 ? {} : { sampling }),
    ...(providerOptions === undefined ? {} : { providerOptions }),
  };
}

/** The run's limits that every request of it carries (the summary request too). */
export function requestLimits(limits: RunServices['limits']) {
  return {
    ...(limits.maxOutputTokens === undefined ? {} : { maxOutputTokens: limits.maxOutputTokens }),
    ...(limits.streamIdleMs === undefined ? {} : { idleTimeoutMs: limits.streamIdleMs }),
  };
}

/**
 * The `prepareStep` actor (state `projecting`): re-reads the log, builds the next request and
 * estimates its size. Over the context budget it commits `compaction.started`; otherwise it
 * commits `step.started` with the request capture — durable before anything is sent (I2).
 */
export function prepareStepActor(servicesOf: ServicesOf) {
  return fromTask<PrepareStepInput>(servicesOf, async (services, input, signal) => {
    const request = buildRequest(services);
    // Read in the same tick as the projection: a steering fact after it makes the run continue.
    const projectedThroughSeq = services.facts().at(-1)?.seq ?? 0;
    const window = services.limits.contextWindowTokens;
    if (window !== undefined && input.mayCompact) {
      const estimatedTokens = estimateRequestTokens(services.facts(), request);
      const budgetTokens = window - outputReserve(services.limits.maxOutputTokens);
      if (estimatedTokens > budgetTokens) {
        await services.commit({
          type: 'compaction.started',
          reason: 'budget',
          estimatedTokens,
          budgetTokens,
        });
        return;
      }
    }
    if (signal.aborted) return;
    const stepId = input.retry?.stepId ?? services.generateId('step');
    const attempt = input.retry?.attempt ?? 1;
    // The request travels to `providerStep` on the machine's step.started event, not in the log.
    await services.commit(
      {
        type: 'step.started',
        stepId,
        attempt,
        // The run's tool set is fixed while it runs; the hash says which set this step was sent
        // with. With a token budget, the prompt's estimated size is what the budget counts until
        // (or unless) the provider reports the usage.
        request: {
          ...services.adapter.capture(request),
          toolsHash: services.toolsHash,
          ...(hasTokenBudget(services.limits) && {
            promptTokens: estimateRequestTokens(services.facts(), request),
          }),
        },
        projectedThroughSeq,
      },
      request,
    );
  });
}
