import type { TurnMachine } from '../pure/turn-machine.ts';
import { turnMachine } from '../pure/turn-machine.ts';
import { prepareStepActor } from './prepare-step-actor.ts';
import { providerStepActor } from './provider-step-actor.ts';
import { retryTimerActor } from './retry-timer-actor.ts';
import type { ServicesOf } from './run-services.ts';
import { settleToolActor } from './settle-tool-actor.ts';
import { summarizeActor } from './summarize-actor.ts';

/** The turn machine with live actors provided; each actor finds its run's services by `runId`. */
export function provideRunEffects(servicesOf: ServicesOf, machine: TurnMachine = turnMachine) {
  return machine.provide({
    actors: {
      prepareStep: prepareStepActor(servicesOf),
      providerStep: providerStepActor(servicesOf),
      retryTimer: retryTimerActor(servicesOf),
      summarize: summarizeActor(servicesOf),
      settleTool: settleToolActor(servicesOf),
    },
  });
}
