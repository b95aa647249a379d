import type { PartialSnapshot } from '../events/facts.ts';
import { StoreInputError } from './event-store.ts';

/** The default bound of a partial snapshot's `text` and of its `reasoning`: 16 KiB of characters. */
export const defaultPartialChars = 16 * 1024;

/**
 * Checks a partial snapshot given to `savePartial` and returns the copy to keep: `text` and
 * `reasoning` cut to `maxChars` each (never inside a surrogate pair), `truncated` set when
 * anything was cut. The start is kept: it is what a person saw first and it does not change
 * while the step streams on.
 */
export function boundPartial(
  partial: PartialSnapshot,
  options: { maxChars: number; where: string; sessionId: string },
): PartialSnapshot {
  const problem = partialProblem(partial);
  if (problem !== undefined) {
    throw new StoreInputError({
      message: `${options.where}: the partial snapshot was not saved: ${problem}`,
      sessionId: options.sessionId,
    });
  }
  const text = cut(partial.text, options.maxChars);
  const reasoning = cut(partial.reasoning, options.maxChars);
  return {
    runId: partial.runId,
    stepId: partial.stepId,
    attempt: partial.attempt,
    text,
    reasoning,
    truncated: partial.truncated || text !== partial.text || reasoning !== partial.reasoning,
  };
}

/** What is wrong with a value meant to be a partial snapshot, or `undefined`. */
export function partialProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'it is not an object';
  const partial = value as Record<string, unknown>;
  for (const key of ['runId', 'stepId', 'text', 'reasoning'] as const) {
    if (typeof partial[key] !== 'string') return `its ${key} must be a string`;
  }
  if (!Number.isInteger(partial.attempt)) return 'its attempt must be a whole number';
  if (typeof partial.truncated !== 'boolean') return 'its truncated must be a boolean';
  return undefined;
}

function cut(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const end = isHighSurrogate(text.charCodeAt(maxChars - 1)) ? maxChars - 1 : maxChars;
  return text.slice(0, end);
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
