/** The kinds of fact the tool runtime commits for one call. */
export type ToolFactKind =
  | 'requested'
  | 'decided'
  | 'started'
  | 'settled'
  /** A later start of a call run again after a restart (execution 2, 3, …). */
  | `started-${number}`
  /** The answer of a call's tool in the run's recovery number n. */
  | `reconciled-${number}`;

/**
 * The deterministic id of a tool fact: `${stepId}:${callId}:${kind}`. Committing a fact whose
 * id is already in the log is a no-op, so a repeated settlement, even from another process,
 * can never commit `tool.started` twice and so never execute twice (I5).
 *
 * @example
 * toolFactId({ stepId: 'step_1', callId: 'call_1', kind: 'started' }); // 'step_1:call_1:started'
 */
export function toolFactId({
  stepId,
  callId,
  kind,
}: {
  stepId: string;
  callId: string;
  kind: ToolFactKind;
}): string {
  return `${stepId}:${callId}:${kind}`;
}
