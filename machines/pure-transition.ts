import { type ActorScope, type AnyStateMachine, createActor } from 'xstate';

const scopes = new WeakMap<AnyStateMachine, ActorScope<never, never>>();

/**
 * The state a snapshot reaches on an event, without executing any action — what XState's pure
 * `transition()` computes, with one inert actor scope per machine instead of a new one (a whole
 * actor with its initial state) on every call, which dominated the cost of each commit.
 * Safe to share because no action runs in it and the turn machine gives no actor a `systemId`.
 */
export function pureTransition<TMachine extends AnyStateMachine>(
  machine: TMachine,
  snapshot: ReturnType<TMachine['transition']>,
  event: Parameters<TMachine['transition']>[1],
): ReturnType<TMachine['transition']> {
  let scope = scopes.get(machine);
  if (scope === undefined) {
    const self = createActor(machine);
    const noop = () => {};
    scope = {
      self,
      id: '',
      sessionId: '',
      system: self.system,
      logger: noop,
      defer: noop,
      emit: noop,
      stopChild: noop,
      actionExecutor: noop,
    } as unknown as ActorScope<never, never>;
    scopes.set(machine, scope);
  }
  return machine.transition(snapshot, event, scope as never) as ReturnType<TMachine['transition']>;
}
