import { prepareStepActor } from './prepare-step-actor.ts';
import { providerStepActor } from './provider-step-actor.ts';
import { retryTimerActor } from './retry-timer-actor.ts';
import type { RunServices } from './run-services.ts';
import { summarizeActor } from './summarize-actor.ts';
import { toolActor } from './tool-actor.ts';
import { turnMachine } from './turn-machine.ts';

/** The turn machine with one run's live actors provided. */
export function liveTurnMachine(services: RunServices) {
  return turnMachine.provide({
    actors: {
      prepareStep: prepareStepActor(services),
      providerStep: providerStepActor(services),
      retryTimer: retryTimerActor(services),
      summarize: summarizeActor(services),
      settleTool: toolActor(services),
    } as never,
  });
}
