import type { ModelAdapter } from '../adapters/model-adapter.ts';
import type { Fact } from '../events/facts.ts';
import { hashJson } from '../events/json.ts';
import { isSharedStore } from '../machines/effects/worker/worker-leases.ts';
import { recordedStateHasTag } from '../machines/pure/state-tags.ts';
import { createRuntime, type Runtime } from '../runtime.ts';
import type { EventStore } from '../store/event-store.ts';
import { CliError } from './cli-error.ts';
import type { CommandContext } from './command-definition.ts';

/**
 * A runtime on the CLI's store, built from the `--runtime` module's options, so an action goes
 * through the runtime's own API and checks (`decide`, `stop`), with the application's tools,
 * model and policy for whatever the run does next. Without a module (`stop` on the folder store
 * only) the model is one that refuses every request: stopping a run never asks the model.
 */
export async function cliRuntime(context: CommandContext): Promise<Runtime> {
  const options = await context.runtimeOptions();
  const store = await context.store();
  if (options === undefined && isSharedStore(store)) {
    // A runtime on a shared store is a worker: while the command runs it may take over the runs
    // of workers that died, and it must drive them with the application's model, never none.
    throw new CliError({
      message:
        'turnlog: on PostgreSQL this command needs --runtime FILE: its runtime is a worker for as long as it runs, and may take over runs whose workers died; it must drive them with your tools and model',
      exit: 'usage',
    });
  }
  return createRuntime({ ...(options ?? { model: noModel }), store });
}

/** The model of a runtime built without `--runtime`: every step fails, not retryable. */
const noModel: ModelAdapter = {
  provider: 'turnlog-cli',
  modelId: 'none',
  capture: (request) => ({
    provider: 'turnlog-cli',
    modelId: 'none',
    messageCount: request.messages.length,
    tools: request.tools.map((tool) => tool.name),
    activeTools: request.activeTools,
    inputHash: hashJson({ system: request.system, messages: request.messages }),
  }),
  step(request) {
    return {
      request: noModel.capture(request),
      events: (async function* () {})(),
      completion: Promise.resolve({
        type: 'step.failed',
        error: {
          kind: 'bad_request',
          retryable: false,
          message: 'turnlog CLI: no model (pass --runtime to continue runs with yours)',
        },
        observedOutput: false,
      }),
    };
  },
};

/**
 * Waits until the session's latest run is idle: parked (waiting for a person) or ended. Resolves
 * with the fact that made it so, or `undefined` when the signal aborted first.
 */
export async function untilIdle(
  store: EventStore,
  sessionId: string,
  signal: AbortSignal,
): Promise<Fact | undefined> {
  let settle: (fact: Fact | undefined) => void = () => {};
  const idle = new Promise<Fact | undefined>((resolve) => {
    settle = resolve;
  });
  const unsubscribe = store.subscribe(sessionId, (fact) => {
    if (isIdle(fact)) settle(fact);
  });
  const onAbort = () => settle(undefined);
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const last = (await store.read(sessionId)).at(-1);
    if (last !== undefined && isIdle(last)) settle(last);
    return await idle;
  } finally {
    unsubscribe();
    signal.removeEventListener('abort', onAbort);
  }
}

/** The run waits for a person (parked) or has ended: nothing moves without an action. */
export function isIdle(fact: Fact): boolean {
  return fact.type === 'run.ended' || recordedStateHasTag(fact.state, 'parked');
}
