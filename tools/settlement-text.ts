import { assertNever, type ToolCallRecord } from '../events/facts.ts';
import type { DecidedPermission } from './tool.ts';

/** The longest thrown message kept in an `error` text (before the output limit applies). */
const maxMessageChars = 4_000;

const inspectFirst = 'Inspect the current state before retrying.';

/**
 * Every sentence the tool runtime settles a call with, in one place: what the model reads as
 * the result of a call that did not simply return. Each says whether the call ran and what to
 * do next.
 */
export const settlementText = {
  withheld: (call: ToolCallRecord): string =>
    call.withheld ??
    'This call was not run: its arguments could not be proven complete. Call the tool again if it is still needed.',

  unknownTool: (name: string, available: readonly string[]): string =>
    `Unknown tool ${JSON.stringify(name)}; the call was not run. Available tools: ${available.length === 0 ? '(none)' : available.join(', ')}.`,

  loopGate: (name: string): string =>
    `This exact call to "${name}" failed twice in a row, so it was not run a third time. Change your approach: different input, another tool, or ask the user.`,

  permissionFailed: (message: string): string =>
    `The permission check for this call failed (${cap(message)}); it was not run.`,

  inputChanged: (decidedHash: string, currentHash: string): string =>
    `The input of this call changed after its permission was decided (decided for ${decidedHash}, now ${currentHash}), so it was not run. Call the tool again if it is still needed.`,

  notStarted: (): string => 'The run was stopped before this call started; it was not run.',

  failed: (message: string): string => `The tool failed: ${cap(message)}`,

  /** The tool returned, but its secrets could not be read (`problem`), so nothing is shown. */
  outputWithheld: (problem: string): string =>
    `The tool ran, but its result is withheld: without the tool's secrets (${problem}) nothing can be redacted. It may have changed things; ${lowerFirst(inspectFirst)}`,

  failedAfterStop: (message: string): string =>
    `The run was stopped while this call was running; the tool ended with: ${cap(message)}. It may have partly run; ${lowerFirst(inspectFirst)}`,

  timedOut: (timeoutMs: number): string =>
    `The tool did not finish within its timeout of ${timeoutMs} ms and was abandoned. It may have partly run; ${lowerFirst(inspectFirst)}`,

  abandonedAfterStop: (stopGraceMs: number): string =>
    `The run was stopped while this call was running and the tool did not stop within ${stopGraceMs} ms. Its outcome is unknown: it may or may not have run to completion. ${inspectFirst}`,

  /** A decision other than `allow`; `started`: the log holds `tool.started` for the call. */
  decided: (decision: DecidedPermission, started: boolean): string => {
    const by = decision.by === 'user' ? 'the user' : 'the permission policy';
    const because = decision.reason === undefined ? '' : ` Reason: ${sentence(decision.reason)}`;
    switch (decision.decision) {
      case 'deny':
        return `This call was denied by ${by}; it was not run.${because} Do not repeat it unchanged.`;
      case 'report-unknown':
        return `The outcome of this call is unknown: it may or may not have run.${because} ${inspectFirst}`;
      case 'abort':
        return started
          ? `This call was aborted by ${by}. It had started, so it may have partly run; ${lowerFirst(inspectFirst)}${because}`
          : `This call was aborted by ${by}; it was not run.${because}`;
      case 'allow':
        return `This call was allowed by ${by}.`;
      default:
        return assertNever(decision.decision, 'permission decision');
    }
  },

  abandoned: (outcome: 'cancelled' | 'unknown', reason: string): string =>
    (outcome === 'cancelled'
      ? `This call was cancelled; it was not run. ${sentence(reason)}`
      : `The outcome of this call is unknown: it may or may not have run. ${sentence(reason)} ${inspectFirst}`
    ).trim(),
};

/** `reason` as a sentence: capitalized, ending with a period. */
function sentence(reason: string): string {
  const trimmed = reason.trim();
  if (trimmed === '') return '';
  const capitalized = `${trimmed[0]?.toUpperCase() ?? ''}${trimmed.slice(1)}`;
  return /[.!?]$/.test(capitalized) ? capitalized : `${capitalized}.`;
}

function lowerFirst(text: string): string {
  return `${text[0]?.toLowerCase() ?? ''}${text.slice(1)}`;
}

function cap(text: string): string {
  return text.length <= maxMessageChars ? text : `${text.slice(0, maxMessageChars)}…`;
}
