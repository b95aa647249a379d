import { type ActorScope, type AnyActor, type AnyStateMachine, createActor } from 'xstate';

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

/**
 * What a held transition uses of an XState actor besides its public API (xstate 5.33): the
 * scope its machine transitions in, whose `actionExecutor` runs each action's effect, its
 * processing status, and `update`, which takes a computed snapshot: it runs the deferred
 * effects (starting spawned children), notifies observers and inspectors, and finishes a done
 * actor. test/machines/held-transition.test.ts checks them against a live actor.
 */
interface ActorInternals {
  _actorScope: ActorScope<never, never> & { actionExecutor: (action: unknown) => void };
  _processingStatus: number;
  update(snapshot: unknown, event: unknown): void;
}

/** A transition computed on a live actor, its effects held until `adopt()`. */
export interface HeldTransition<TSnapshot> {
  /** The snapshot the event leads to (the actor does not have it yet). */
  snapshot: TSnapshot;
  /**
   * Gives the actor the computed snapshot, as if it had been sent `event` now, and runs the
   * held effects. False (nothing done) when the actor has moved or stopped since: send instead.
   */
  adopt(event: unknown): boolean;
}

const running = 1;

/**
 * Computes a live actor's transition once, without letting the actor see it: the machine's
 * `transition` runs in the actor's own scope (so spawned children belong to it) but every
 * action's effect is held back, and the actor keeps its snapshot. Adopting it later does what
 * `actor.send(event)` would have done then, without computing the transition again: the run
 * driver computes each fact's state before the fact is durable and hands the live actor the
 * result after (I3), one XState transition per fact instead of two.
 *
 * Children created by a transition that is never adopted are never started.
 */
export function heldTransition<TSnapshot>(
  actor: AnyActor,
  from: TSnapshot,
  event: unknown,
): HeldTransition<TSnapshot> {
  const internals = actor as unknown as ActorInternals;
  const scope = internals._actorScope;
  const held: unknown[] = [];
  const holding = {
    ...scope,
    actionExecutor: (action: unknown) => {
      held.push(action);
    },
  };
  const snapshot = (actor.logic as AnyStateMachine).transition(
    from as never,
    event as never,
    holding as never,
  ) as TSnapshot;
  return {
    snapshot,
    adopt(stored) {
      if (actor.getSnapshot() !== from || internals._processingStatus !== running) return false;
      for (const action of held) scope.actionExecutor(action);
      internals.update(snapshot, stored);
      return true;
    },
  };
}
