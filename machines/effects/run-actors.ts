import { assertEvent } from 'xstate';
import type { TurnMachine } from '../pure/turn-machine.ts';
import { turnMachine } from '../pure/turn-machine.ts';
import { prepareStepActor } from './prepare-step-actor.ts';
import { providerStepActor } from './provider-step-actor.ts';
import { retryTimerActor } from './retry-timer-actor.ts';
import type { ServicesOf } from './run-services.ts';
import { settleToolActor } from './settle-tool-actor.ts';
import { summarizeActor } from './summarize-actor.ts';

/** What the runtime does when the machine says so (the chart names when; this says how). */
export interface RunLifecycle {
  /** I10: a stop is durable: abort the run's request and its tools' signal. */
  abort(ids: { sessionId: string; runId: string }, reason: string): void;
}

/**
 * The turn machine with its effects provided: the live actors, each finding its run's services
 * by `runId`, and the lifecycle actions the runtime performs.
 */
export function provideRunEffects(
  servicesOf: ServicesOf,
  lifecycle: RunLifecycle,
  machine: TurnMachine = turnMachine,
) {
  return machine.provide({
    actions: {
      abortRun: ({ context, event }) => {
        assertEvent(event, 'run.stop.requested');
        lifecycle.abort(context, event.reason);
      },
    },
    actors: {
      prepareStep: prepareStepActor(servicesOf),
      providerStep: providerStepActor(servicesOf),
      retryTimer: retryTimerActor(servicesOf),
      summarize: summarizeActor(servicesOf),
      settleTool: settleToolActor(servicesOf),
    },
  });
}
