import type { AnyActorLogic } from 'xstate';
import { turnMachine } from '../../machines/pure/turn-machine.ts';

/** The turn machine's actors, by the name the machine invokes them with. */
export const actorNames = [
  'prepareStep',
  'providerStep',
  'retryTimer',
  'summarize',
  'settleTool',
] as const;

/** The turn machine with each actor replaced by `actorFor(name)` (inert actors for machine tests). */
export function providedMachine(actorFor: (name: (typeof actorNames)[number]) => AnyActorLogic) {
  return turnMachine.provide({
    actors: Object.fromEntries(actorNames.map((name) => [name, actorFor(name)])) as never,
  });
}
