import type { ToolCallRecord } from '../../events/facts.ts';
import type { SettleContext } from '../../tools/tool.ts';
import type { SettleToolInput } from '../pure/actor-inputs.ts';
import { fromTask, type RunServices, type ServicesOf } from './run-services.ts';

/** The call record of `callId` in the completed step `stepId`, as the guard judged it. */
function proposedCall(services: RunServices, stepId: string, callId: string): ToolCallRecord {
  const facts = services.facts();
  for (let index = facts.length - 1; index >= 0; index -= 1) {
    const fact = facts[index];
    if (fact?.type !== 'step.completed' || fact.stepId !== stepId) continue;
    const call = fact.toolCalls.find((candidate) => candidate.callId === callId);
    if (call !== undefined) return call;
  }
  throw new Error(`tool actor: no call ${callId} in the completed step ${stepId}`);
}

/** What the tool runtime needs to settle the calls of step `stepId` of a run. */
export function settleContext(
  services: RunServices,
  ids: { sessionId: string; runId: string; stepId: string },
): SettleContext {
  return {
    sessionId: ids.sessionId,
    runId: ids.runId,
    stepId: ids.stepId,
    limits: services.limits,
    signal: services.signal,
    commit: services.commit,
    commitAll: services.commitAll,
    facts: services.facts(),
  };
}

/**
 * The `settleTool` actor: one phase of one call's settlement by the tool runtime — `decide`
 * (validation, loop gate, permission; only after a recovery, see `providerStep`), `run` (start,
 * execute, settle) or `abandon` (settle a call that will not run). It reports only by
 * committing facts; its last one is the call's `tool.settled` (or, when deciding, the
 * decision). Tools honour the run's stop signal and grace.
 */
export function settleToolActor(servicesOf: ServicesOf) {
  return fromTask<SettleToolInput>(servicesOf, async (services, input) => {
    const call = proposedCall(services, input.stepId, input.callId);
    const context = settleContext(services, input);
    switch (input.phase) {
      case 'decide':
        await services.commit(await services.callSettler.decide(call, context));
        return;
      case 'run':
        return services.callSettler.run(call, input.decision, context, input.execution);
      case 'reconcile':
        return services.callSettler.reconcile(call, input.recovery, context);
      case 'abandon':
        return services.callSettler.abandon(
          call,
          input.outcome,
          input.outcome === 'unknown'
            ? 'The run was stopped after this call started; it may or may not have completed.'
            : 'The run was stopped before this call ran.',
          context,
        );
    }
  });
}
