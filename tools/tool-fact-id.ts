/** The kinds of fact the tool runtime commits for one call. */
export type ToolFactKind = 'requested' | 'decided' | 'started' | 'settled';

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
