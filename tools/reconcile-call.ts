import type { ReconcileAnswer } from '../events/facts.ts';
import { executeTool } from './execute-tool.ts';
import type { Tool } from './tool.ts';
import { redactedMessage, redactSecrets, type ToolSecrets, withheldNote } from './tool-output.ts';

/** The default time a tool's `reconcile` may take (`reconcileTimeoutMs`). */
export const defaultReconcileTimeoutMs = 10_000;

/** The longest `reason` a `tool.reconciled` keeps (the person reads it). */
const maxReasonChars = 1_000;

/** What asking a tool about a call found: the answer, why, and (done) the call's output. */
export type ReconcileFinding =
  | { answer: 'done'; output: unknown }
  | { answer: Exclude<ReconcileAnswer, 'done'>; reason?: string };

/**
 * How a started-and-unsettled call of `tool` is resolved without a person: `reconcile` when the
 * tool has one (it can report `done` with the real output, sparing a second run), else
 * `idempotent` when it says running again is safe, else `undefined`.
 */
export function checkOfTool(tool: Tool | undefined): 'reconcile' | 'idempotent' | undefined {
  if (tool === undefined) return undefined;
  if (typeof tool.reconcile === 'function') return 'reconcile';
  return tool.idempotent === true ? 'idempotent' : undefined;
}

/**
 * Asks `tool.reconcile` about one call under `reconcileTimeoutMs` and the run's signal. Never
 * rejects: a throw, a timeout, a stop or an answer of another shape is `unknown`, its reason
 * saying which (secrets redacted).
 */
export async function askReconcile({
  tool,
  input,
  context,
  secrets,
}: {
  tool: Tool;
  input: unknown;
  context: { callId: string; sessionId: string; idempotencyKey: string; signal: AbortSignal };
  secrets: () => ToolSecrets;
}): Promise<ReconcileFinding> {
  const reconcile = tool.reconcile;
  if (reconcile === undefined) return unknown('the tool has no reconcile');
  const finding = await askWithin(reconcile, { tool, input, context, secrets });
  if (finding.answer !== 'unknown' || finding.reason === undefined) return finding;
  const readable = secrets();
  return readable.readable
    ? { ...finding, reason: redactSecrets(finding.reason, readable.secrets) }
    : { ...finding, reason: withheldNote('its reason is', readable) };
}

async function askWithin(
  reconcile: NonNullable<Tool['reconcile']>,
  { tool, input, context, secrets }: Parameters<typeof askReconcile>[0],
): Promise<ReconcileFinding> {
  const timeoutMs = tool.reconcileTimeoutMs ?? defaultReconcileTimeoutMs;
  const result = await executeTool({
    tool: { execute: (value, own) => reconcile(value, own), timeoutMs },
    input,
    ...context,
    stopGraceMs: 0,
  });
  switch (result.kind) {
    case 'returned':
      return findingOf(result.value);
    case 'threw':
      return unknown(`reconcile threw: ${redactedMessage(result.error, secrets())}`);
    case 'timeout':
      return unknown(`reconcile did not answer within ${timeoutMs} ms`);
    case 'abandoned':
      return unknown('the run was stopped while reconcile was asked');
  }
}

/** Reads what `reconcile` returned; anything but one of its three answers is `unknown`. */
function findingOf(value: unknown): ReconcileFinding {
  const answer = value as { status?: unknown; output?: unknown; reason?: unknown } | null;
  switch (answer?.status) {
    case 'done':
      return { answer: 'done', output: answer.output };
    case 'not-done':
      return { answer: 'not-done' };
    case 'unknown':
      return unknown(typeof answer.reason === 'string' ? answer.reason : 'no reason given');
    default:
      return unknown(
        `reconcile returned ${JSON.stringify(value) ?? String(value)}, not { status: 'done' | 'not-done' | 'unknown' }`,
      );
  }
}

function unknown(reason: string): ReconcileFinding {
  const bounded = reason.length > maxReasonChars ? `${reason.slice(0, maxReasonChars)}…` : reason;
  return { answer: 'unknown', reason: bounded };
}
