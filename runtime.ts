import type { InspectionEvent, Observer } from 'xstate';
import { type AiSdkLanguageModel, aiSdkAdapter } from './adapters/ai-sdk-adapter.ts';
import type { ModelAdapter } from './adapters/model-adapter.ts';
import type { Fact, PermissionDecision, RunLimits } from './events/facts.ts';
import { createIdGenerator, type IdGenerator } from './events/ids.ts';
import type { ModelMessage } from './events/messages.ts';
import { planRecovery } from './events/plan-recovery.ts';
import { projectHistory } from './events/project-history.ts';
import { type PendingDecision, projectTurn } from './events/project-turn.ts';
import { foldRun } from './machines/rehydrate.ts';
import { liveTurnMachine } from './machines/run-actors.ts';
import { createRunDriver, type RunDriver } from './machines/run-driver.ts';
import type { RunServices } from './machines/run-services.ts';
import {
  createTurnChannel,
  type TurnEvent,
  type TurnHandle,
  type TurnSink,
  turnResult,
} from './machines/turn-channel.ts';
import {
  InvalidArgumentError,
  NoActiveRunError,
  RuntimeClosedError,
  SessionBusyError,
} from './runtime-errors.ts';
import type { EventStore } from './store/event-store.ts';
import { lowdbStore } from './store/lowdb-store.ts';
import { toModelToolDefinitions } from './tools/define-tool.ts';
import { validateDecision } from './tools/permission-policy.ts';
import type { PermissionPolicy, ToolSet } from './tools/tool.ts';
import { createToolRuntime } from './tools/tool-runtime.ts';

/** The version recorded in each `run.started`. */
export const runtimeVersion = '0.1.0';

/** The defaults of `limits`. */
export const defaultLimits: RunLimits = {
  maxSteps: 20,
  maxAttempts: 3,
  maxOutputTokens: undefined,
  toolOutputChars: 20_000,
  contextWindowTokens: undefined,
  toolConcurrency: 4,
  stopGraceMs: 5_000,
  // Generous: a reasoning model may think for minutes before its first part.
  streamIdleMs: 600_000,
};

export interface RuntimeOptions {
  /** An AI SDK language model (spec v3 or v4) or a `ModelAdapter`. */
  model: AiSdkLanguageModel | ModelAdapter;
  tools?: ToolSet;
  /** Default: `lowdbStore({ dir: '.turnlog' })`. */
  store?: EventStore;
  system?: string;
  limits?: Partial<RunLimits>;
  /** Runtime-wide permission policy, consulted after each tool's own permission. */
  policy?: PermissionPolicy;
  /** XState inspection observer (e.g. `createWebSocketInspector().inspect`), passed to `createActor`. */
  inspect?: ((event: InspectionEvent) => void) | Observer<InspectionEvent>;
  /** Clock in ms since the epoch (fact times). Default `Date.now`. */
  now?: () => number;
  generateId?: IdGenerator;
  /** Randomness in [0, 1) for retry jitter. Default `Math.random`. */
  random?: () => number;
}

/** What `recover()` found for one unfinished run. */
export interface RecoveredRun {
  sessionId: string;
  runId: string;
  /** The state the run was in when its process stopped. */
  interruptedIn: string | undefined;
  /** Calls that started and never settled: they may have run, and are never run again (I8). */
  indeterminate: string[];
  /** `resumed`: running again; `parked`: waiting for `decide()`; `ended`: only `run.ended` was missing. */
  status: 'resumed' | 'parked' | 'ended';
  turn: TurnHandle;
}

interface LiveRun {
  driver: RunDriver;
  controller: AbortController;
}

/**
 * Creates a turnlog runtime: the store, the model adapter, the tools and one live turn machine
 * per running session.
 *
 * @example
 * const runtime = createRuntime({ model, tools: { add }, store: memoryStore() });
 * const turn = await runtime.send({ sessionId: 's1', text: 'What is 2 + 3?' });
 * for await (const event of turn.events) if (event.type === 'text.delta') process.stdout.write(event.text);
 * console.log((await turn.done).status); // 'completed'
 */
export function createRuntime(options: RuntimeOptions) {
  const now = options.now ?? Date.now;
  const adapter = toAdapter(options.model, now);
  const tools = options.tools ?? {};
  const toolDefinitions = toModelToolDefinitions(tools);
  const toolRuntime = createToolRuntime({
    tools,
    ...(options.policy ? { policy: options.policy } : {}),
  });
  const store = options.store ?? lowdbStore({ dir: '.turnlog' });
  const limits = resolveLimits(options.limits);
  const generateId = options.generateId ?? createIdGenerator({ now });
  const random = options.random ?? Math.random;
  const inspect = options.inspect;

  const live = new Map<string, LiveRun>();
  // The actors are provided once; each finds its run's services here by runId.
  const runServices = new Map<string, RunServices>();
  const machine = liveTurnMachine((runId) => {
    const services = runServices.get(runId);
    if (services === undefined)
      throw new Error(`turnlog: no live run ${runId} (an actor outlived its run)`);
    return services;
  });
  // Per unfinished run: the `done` resolvers and a weak reference to the caller's event buffer.
  const channels = new Map<string, TurnSink>();
  const locks = new Map<string, Promise<unknown>>();
  let closed = false;

  /** Serializes the public operations on one session. */
  function withSession<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    if (closed)
      return Promise.reject(
        new RuntimeClosedError({ message: 'This runtime is closed; create a new one.' }),
      );
    const previous = locks.get(sessionId) ?? Promise.resolve();
    const result = previous.then(work, work);
    const tail = result.catch(() => {});
    locks.set(sessionId, tail);
    tail.then(() => {
      if (locks.get(sessionId) === tail) locks.delete(sessionId);
    });
    return result;
  }

  /** A new handle for a run; the runtime keeps only its sink. */
  function newHandle(
    ids: { sessionId: string; turnId: string; runId: string },
    seen: readonly TurnEvent[] = [],
  ) {
    const { handle, sink } = createTurnChannel(ids, seen);
    channels.set(ids.runId, sink);
    return { handle, sink };
  }

  /** The sink of a run's handle (a run rehydrated without a handle gets a sink nobody reads). */
  function sinkFor(ids: { sessionId: string; turnId: string; runId: string }): TurnSink {
    return channels.get(ids.runId) ?? newHandle(ids).sink;
  }

  /** Wires one run's driver, services and live actor. */
  function openRun(
    ids: { sessionId: string; turnId: string; runId: string },
    facts: Fact[],
    runLimits: RunLimits,
  ) {
    const controller = new AbortController();
    const channel = sinkFor(ids);
    let driver!: RunDriver;
    const services: RunServices = {
      adapter,
      toolRuntime,
      toolDefinitions,
      system: options.system,
      limits: runLimits,
      store,
      facts: () => driver.facts,
      commit: (draft) => driver.commit(draft),
      signal: controller.signal,
      generateId,
      random,
      emit: (event) => channel.push(event),
      prepared: new Map(),
      onError: (error) => driver.fail(error),
    };
    runServices.set(ids.runId, services);
    driver = createRunDriver({
      store,
      machine,
      ...ids,
      facts,
      now,
      generateId,
      ...(inspect ? { inspect } : {}),
      onFact: (fact) => {
        channel.push(fact);
        if (fact.type === 'run.stop.requested') controller.abort(new Error(fact.reason));
        if (fact.state === 'awaitingPermission') park(ids.sessionId, driver);
      },
    });
    driver.ended.then(
      () => {
        channel.end(turnResult(driver.facts, ids.runId));
        forget(ids, driver);
      },
      (error) => {
        channel.fail(error);
        forget(ids, driver);
      },
    );
    live.set(ids.sessionId, { driver, controller });
    return driver;
  }

  /** The run is over (or its driver failed): the runtime keeps nothing of it. */
  function forget(ids: { sessionId: string; runId: string }, driver: RunDriver) {
    channels.delete(ids.runId);
    if (live.get(ids.sessionId)?.driver !== driver) return;
    live.delete(ids.sessionId);
    runServices.delete(ids.runId);
  }

  /** A run waiting for a person holds no actor: drop it; the log rehydrates it on `decide()`. */
  function park(sessionId: string, driver: RunDriver) {
    // Serialized with decide()/steer()/stop(): one that already picked this live driver commits
    // before the actor is dropped, instead of finding it stopped (its fact lost or half-taken).
    withSession(sessionId, async () => {
      await driver.settled();
      const snapshot = driver.snapshot();
      if (snapshot?.status !== 'active' || snapshot.value !== 'awaitingPermission') return;
      if (live.get(sessionId)?.driver !== driver) return;
      driver.release();
      live.delete(sessionId);
      runServices.delete(driver.runId);
    }).catch(() => {
      // Closed meanwhile: close() releases every live run itself.
    });
  }

  /** The session's unfinished run, live or rebuilt from the log. */
  async function activeRun(sessionId: string): Promise<LiveRun | undefined> {
    const running = live.get(sessionId);
    if (running) return running;
    const facts = await store.read(sessionId);
    const open = openRunOf(facts);
    if (open === undefined) return undefined;
    const folded = foldRun(facts, open.runId);
    const driver = openRun(open, facts, open.limits);
    await driver.resume(folded.snapshot);
    // A fold that reached terminal only lacked run.ended: resume appended it, nothing is open.
    return live.get(sessionId);
  }

  function requireText(value: unknown, argument: string): string {
    if (typeof value !== 'string' || value.trim() === '') {
      throw new InvalidArgumentError({
        message: `${argument} must be a non-empty string (got ${JSON.stringify(value)}).`,
        argument,
      });
    }
    return value;
  }

  return {
    /** Starts a run for a user message. Throws `SessionBusyError` while the session's last run is unfinished (steer instead). */
    send(input: { sessionId: string; text: string }): Promise<TurnHandle> {
      const sessionId = requireText(input?.sessionId, 'sessionId');
      const text = requireText(input?.text, 'text');
      return withSession(sessionId, async () => {
        const facts = live.get(sessionId)?.driver.facts ?? (await store.read(sessionId));
        const open = openRunOf(facts);
        if (open) {
          throw new SessionBusyError({
            message:
              `Session ${sessionId} has an unfinished run (${open.runId}); add to it with runtime.steer(), answer ` +
              'its pending decisions with runtime.decide(), end it with runtime.stop(), or call runtime.recover() after a restart.',
            sessionId,
            runId: open.runId,
          });
        }
        const ids = { sessionId, turnId: generateId('turn'), runId: generateId('run') };
        const { handle } = newHandle(ids);
        const driver = openRun(ids, [...facts], limits);
        await driver.begin({
          type: 'run.started',
          input: { text },
          runtimeVersion,
          limits,
          ...(options.system === undefined ? {} : { system: options.system }),
        });
        return handle;
      });
    },

    /** Answers a pending decision: a permission ask (`allow`/`deny`/`abort`) or an indeterminate call (`report-unknown`/`abort`). */
    decide(input: {
      sessionId: string;
      callId: string;
      decision: PermissionDecision;
      reason?: string;
      inputHash?: string;
    }): Promise<void> {
      const sessionId = requireText(input?.sessionId, 'sessionId');
      const callId = requireText(input?.callId, 'callId');
      return withSession(sessionId, async () => {
        const run = await activeRun(sessionId);
        if (run === undefined) throw noRun(sessionId, 'decide');
        const view = projectTurn(run.driver.facts).runs.at(-1);
        const decided = run.driver.facts.flatMap((fact) =>
          fact.type === 'tool.permission.decided' && fact.runId === view?.runId ? [fact] : [],
        );
        const checked = validateDecision({
          pending: view?.pending ?? [],
          decided,
          decision: { ...input, callId },
        });
        if (checked.status === 'no-op') return;
        await run.driver.commit({
          type: 'tool.permission.decided',
          callId,
          decision: input.decision,
          inputHash: checked.inputHash,
          by: 'user',
          ...(input.reason === undefined ? {} : { reason: input.reason }),
        });
      });
    },

    /** Adds a user message to the session's unfinished run; the model sees it in its next request. */
    steer(input: { sessionId: string; text: string }): Promise<void> {
      const sessionId = requireText(input?.sessionId, 'sessionId');
      const text = requireText(input?.text, 'text');
      return withSession(sessionId, async () => {
        const run = await activeRun(sessionId);
        if (run === undefined) throw noRun(sessionId, 'steer');
        await run.driver.commit({
          type: 'steering.received',
          messageId: generateId('message'),
          text,
        });
      });
    },

    /** Stops the session's unfinished run; it ends `aborted` (I10). Resolves once the stop is durable. */
    stop(input: { sessionId: string; reason?: string }): Promise<void> {
      const sessionId = requireText(input?.sessionId, 'sessionId');
      return withSession(sessionId, async () => {
        const run = await activeRun(sessionId);
        if (run === undefined) throw noRun(sessionId, 'stop');
        await run.driver.commit({
          type: 'run.stop.requested',
          reason: input.reason ?? 'stopped by the user',
        });
      });
    },

    /** The decisions a person owes in this session. */
    async pending(sessionId: string): Promise<PendingDecision[]> {
      const facts =
        live.get(sessionId)?.driver.facts ??
        (await store.read(requireText(sessionId, 'sessionId')));
      return projectTurn(facts).pending.map(({ kind, callId, name, input, inputHash }) => ({
        kind,
        callId,
        name,
        input,
        inputHash,
      }));
    },

    /** The messages the model would see next, projected from the log. */
    async history(sessionId: string): Promise<ModelMessage[]> {
      const facts =
        live.get(sessionId)?.driver.facts ??
        (await store.read(requireText(sessionId, 'sessionId')));
      return projectHistory([...facts], { provider: adapter.provider });
    },

    /** The session's durable log. */
    facts(sessionId: string): Promise<Fact[]> {
      return store.read(requireText(sessionId, 'sessionId'));
    },

    /**
     * Rehydrates every unfinished run found in the store (after a restart): no tool is run again
     * and no request is re-sent implicitly (I8). Returns what it found, with a handle per run.
     */
    async recover(): Promise<RecoveredRun[]> {
      const report: RecoveredRun[] = [];
      for (const open of await store.openRuns()) {
        if (live.has(open.sessionId)) continue;
        report.push(
          await withSession(open.sessionId, () => recoverRun(open.sessionId, open.runId)),
        );
      }
      return report;
    },

    /**
     * Closes the store. Live runs are detached, not ended: they stay unfinished in the log and
     * `recover()` resumes them later (stop them first to end them).
     */
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await Promise.all([...locks.values()]);
      for (const run of live.values()) {
        run.driver.release();
        run.controller.abort(new Error('runtime closed'));
      }
      await Promise.all([...live.values()].map((run) => run.driver.settled()));
      live.clear();
      runServices.clear();
      const closedError = new RuntimeClosedError({
        message:
          'The runtime was closed before this run ended; it stays unfinished in the log: call recover() on a new runtime to resume it.',
      });
      for (const sink of channels.values()) sink.fail(closedError);
      channels.clear();
      await store.close();
    },
  };

  async function recoverRun(sessionId: string, runId: string): Promise<RecoveredRun> {
    const facts = await store.read(sessionId);
    const plan = planRecovery(facts).runs.find((candidate) => candidate.runId === runId);
    if (plan === undefined)
      throw new Error(`recover: run ${runId} is not unfinished in session ${sessionId}`);
    if (plan.damage.length > 0) {
      throw new InvalidArgumentError({
        message: `recover: the log of session ${sessionId} is damaged (${plan.damage.map((damage) => damage.message).join('; ')}); it is not repaired automatically — inspect runtime.facts('${sessionId}').`,
        argument: 'store',
      });
    }
    const folded = foldRun(facts, runId);
    const ids = { sessionId, turnId: plan.turnId, runId };
    const { handle } = newHandle(ids, folded.facts);
    const driver = openRun(
      ids,
      facts,
      folded.facts[0]?.type === 'run.started' ? folded.facts[0].limits : limits,
    );
    await driver.resume(folded.snapshot);
    const indeterminate = [...plan.indeterminate, ...plan.unresolved].map((call) => call.callId);
    if (folded.snapshot.status !== 'done') {
      for (const call of plan.indeterminate) {
        await driver.commit({
          type: 'tool.indeterminate',
          id: `${call.stepId}:${call.callId}:indeterminate`,
          callId: call.callId,
          name: call.name,
        });
      }
      await driver.commit({
        type: 'run.recovered',
        interrupted: plan.interruptedIn ?? 'unknown',
        indeterminate,
      });
    }
    const state = driver.snapshot();
    const status =
      folded.snapshot.status === 'done'
        ? 'ended'
        : state?.value === 'awaitingPermission'
          ? 'parked'
          : 'resumed';
    return {
      sessionId,
      runId,
      interruptedIn: plan.interruptedIn,
      indeterminate,
      status,
      turn: handle,
    };
  }
}

export type Runtime = ReturnType<typeof createRuntime>;

function noRun(sessionId: string, operation: string) {
  return new NoActiveRunError({
    message: `runtime.${operation}(): session ${sessionId} has no unfinished run; start one with runtime.send().`,
    sessionId,
  });
}

/** The session's last run when it has no `run.ended`. */
function openRunOf(facts: readonly Fact[]) {
  const started = facts.findLast((fact) => fact.type === 'run.started');
  if (started?.type !== 'run.started') return undefined;
  const ended = facts.some((fact) => fact.type === 'run.ended' && fact.runId === started.runId);
  return ended
    ? undefined
    : {
        sessionId: started.sessionId,
        turnId: started.turnId,
        runId: started.runId,
        limits: started.limits,
      };
}

function toAdapter(model: RuntimeOptions['model'], now: () => number): ModelAdapter {
  if (
    typeof model === 'object' &&
    model !== null &&
    'step' in model &&
    typeof model.step === 'function' &&
    'capture' in model
  ) {
    return model as ModelAdapter;
  }
  // The runtime's clock reads Retry-After dates too: the delay lands in step.failed.
  return aiSdkAdapter(model as AiSdkLanguageModel, { now });
}

function resolveLimits(overrides: Partial<RunLimits> = {}): RunLimits {
  const limits = { ...defaultLimits, ...overrides };
  for (const [key, value] of Object.entries(limits)) {
    const optional =
      key === 'maxOutputTokens' || key === 'contextWindowTokens' || key === 'streamIdleMs';
    if (value === undefined && optional) continue;
    const allowsZero = key === 'stopGraceMs';
    if (typeof value !== 'number' || !Number.isInteger(value) || value < (allowsZero ? 0 : 1)) {
      throw new InvalidArgumentError({
        message: `limits.${key} must be ${allowsZero ? 'a non-negative' : 'a positive'} integer${optional ? ' or undefined' : ''} (got ${JSON.stringify(value)}).`,
        argument: `limits.${key}`,
      });
    }
  }
  return limits;
}
