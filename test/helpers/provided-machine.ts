import type { AnyActorLogic } from 'xstate';
import { turnMachine } from '../../machines/pure/turn-machine.ts';

/** The turn machine's actors, by the name the machine invokes them with. */
export type ActorName = 'prepareStep' | 'providerStep' | 'retryTimer' | 'summarize' | 'settleTool';

/** The turn machine with each actor replaced by `actorFor(name)` (inert actors for machine tests). */
export function providedMachine(actorFor: (name: ActorName) => AnyActorLogic) {
  return turnMachine.provide({
    actors: {
      prepareStep: actorFor('prepareStep'),
      providerStep: actorFor('providerStep'),
      retryTimer: actorFor('retryTimer'),
      summarize: actorFor('summarize'),
      settleTool: actorFor('settleTool'),
    },
  });
}
