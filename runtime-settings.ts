import type { RunLimits, RunSettings } from './events/facts.ts';

/**
 * `settings` of `createRuntime` and `send`: the sampling settings and provider options every
 * request of a run is sent with, and its output token limit. A run records them in its
 * `run.started` (the token limit as `limits.maxOutputTokens`, which the tool-call guard also
 * reads), so a recovered run sends its requests as it did before the restart.
 *
 * @example
 * createRuntime({ model, settings: { temperature: 0, maxOutputTokens: 2_000 } });
 * runtime.send({ sessionId, text, settings: { providerOptions: { openai: { reasoningEffort: 'low' } } } });
 */
export interface ModelSettings extends RunSettings {
  /** Output tokens per request; a step reaching it is cut off (its calls withheld). */
  maxOutputTokens?: number | undefined;
}

/**
 * What a run records of its settings: `send`'s over the runtime's (field by field; provider
 * options provider by provider), the output token limit folded into the run's limits.
 */
export function runSettings(
  limits: RunLimits,
  fromRuntime: ModelSettings | undefined,
  fromSend: ModelSettings | undefined,
): { limits: RunLimits; settings?: RunSettings } {
  const providerOptions =
    fromRuntime?.providerOptions === undefined && fromSend?.providerOptions === undefined
      ? undefined
      : { ...fromRuntime?.providerOptions, ...fromSend?.providerOptions };
  const { maxOutputTokens, ...settings } = {
    ...withoutUndefined(fromRuntime),
    ...withoutUndefined(fromSend),
    ...(providerOptions === undefined ? {} : { providerOptions }),
  };
  return {
    limits: maxOutputTokens === undefined ? limits : { ...limits, maxOutputTokens },
    ...(Object.keys(settings).length === 0 ? {} : { settings }),
  };
}

/** The fields that are set (an explicit `undefined` leaves the runtime's value in place). */
function withoutUndefined(settings: ModelSettings | undefined): ModelSettings {
  return Object.fromEntries(
    Object.entries(settings ?? {}).filter(([, value]) => value !== undefined),
  ) as ModelSettings;
}
