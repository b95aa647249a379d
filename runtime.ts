import { randomUUID } from 'node:crypto';
import type { InspectionEvent, Observer } from 'xstate';
import { type AiSdkLanguageModel, aiSdkAdapter } from './adapters/ai-sdk-adapter.ts';
import type { ModelAdapter } from './adapters/model-adapter.ts';
import type { Fact, PermissionDecision, RunLimits } from './events/facts.ts';
import { createIdGenerator, type IdGenerator } from './events/ids.ts';
import type { ModelMessage } from './events/messages.ts';
import { projectHistory } from './events/project-history.ts';
import { type PendingDecision, projectTurn } from './events/project-turn.ts';
import { TurnlogError } from './events/turnlog-error.ts';
import { createLiveRuns, type RecoveredRun } from './machines/effects/live-runs.ts';
import { defaultMaxRetryAfterMs } from './machines/effects/retry-timer-actor.ts';
import {
  createRequestRouter,
  noActiveRun,
  performRequest,
  type RunRequest,
} from './machines/effects/run-requests.ts';
import type { TurnHandle } from './machines/effects/turn-channel.ts';
import { createWorker, defaultLeaseMs, isSharedStore } from './machines/effects/worker-leases.ts';
import { unfinishedRun } from './machines/pure/resume-run.ts';
import { checkMethodArgument, checkRuntimeOptions, checkSessionId } from './runtime-arguments.ts';
import { InvalidArgumentError, RuntimeClosedError, SessionBusyError } from './runtime-errors.ts';
import { ConcurrencyError, type EventStore } from './store/event-store.ts';
import { lowdbStore } from './store/folder/lowdb-store.ts';
import { LeaseLostError } from './store/run-leases.ts';
import type { OwnTools, RuntimeTools } from './tools/provider-tool.ts';
import type { PermissionPolicy } from './tools/tool.ts';
import { createToolSetSource } from './tools/tool-set-source.ts';

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
  maxRetryAfterMs: defaultMaxRetryAfterMs,
};

export interface RuntimeOptions<TTools extends RuntimeTools = RuntimeTools> {
  /** An AI SDK language model (spec v3 or v4) or a `ModelAdapter`. */
  model: AiSdkLanguageModel | ModelAdapter;
  /**
   * The tools: a record, or a function returning one that is read when each run starts (the
   * run keeps that set until it ends), e.g. `() => ({ ...watch.tools, weather })`. turnlog's
   * own tools (`defineTool`) and provider-executed ones (`openai.tools.webSearch()`,
   * `anthropic.tools.webSearch_20250305()`, `google.tools.googleSearch()`), which the provider
   * runs: turnlog sends them and records their calls and results, never executes them.
   */
  tools?: TTools | (() => TTools);
  /** Default: `lowdbStore({ dir: '.turnlog' })`. */
  store?: EventStore;
  system?: string;
  limits?: Partial<RunLimits>;
  /**
   * Runtime-wide permission policy, consulted after each tool's own permission; its `input` is
   * typed as the named tool's validated input.
   */
  policy?: PermissionPolicy<OwnTools<TTools>>;
  /** XState inspection observer (e.g. `createWebSocketInspector().inspect`), passed to `createActor`. */
  inspect?: ((event: InspectionEvent) => void) | Observer<InspectionEvent>;
  /** Clock in ms since the epoch (fact times). Default `Date.now`. */
  now?: () => number;
  generateId?: IdGenerator;
  /** Randomness in [0, 1) for retry jitter. Default `Math.random`. */
  random?: () => number;
  /**
   * With a store several processes share (`postgresStore`), each runtime is a worker: it drives a
   * run only under a lease, takes over the runs of workers that died, and hands requests for runs
   * driven elsewhere to their driver (README, "Running many workers"). `id` defaults to a random
   * id (unique per runtime; a restarted worker may reuse one), `leaseMs` to 15 s: a dead worker's
   * runs move on about 0.7–1.3 × `leaseMs` after its death (README, "Dead workers").
   */
  worker?: WorkerOptions;
}

/** A worker's settings (`createRuntime({ worker })`). */
export interface WorkerOptions {
  id?: string;
  /** How long a run's lease lasts without a renewal (renewed every `leaseMs / 3`). Default 15,000. */
  leaseMs?: number;
}

export type { RecoveredRun };

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
export function createRuntime<TTools extends RuntimeTools = RuntimeTools>(
  options: RuntimeOptions<TTools>,
) {
  checkRuntimeOptions(options);
  const now = options.now ?? Date.now;
  const adapter = toAdapter(options.model, now);
  const tools = createToolSetSource({
    tools: options.tools,
    // The policy is only ever asked about the run's own tools, each with its validated input.
    policy: options.policy as PermissionPolicy | undefined,
  });
  const store = options.store ?? lowdbStore({ dir: '.turnlog' });
  const limits = { ...defaultLimits, ...options.limits };
  const generateId = options.generateId ?? createIdGenerator({ now });
  const closing = new AbortController();
  const worker = isSharedStore(store)
    ? {
        id: options.worker?.id ?? `worker-${randomUUID()}`,
        leaseMs: options.worker?.leaseMs ?? defaultLeaseMs,
      }
    : undefined;
  if (worker === undefined && options.worker !== undefined) {
    throw new InvalidArgumentError({
      message:
        'createRuntime(): worker needs a store several processes share (postgresStore(…)); this store serves one process, whose runtime drives every run itself.',
      argument: 'worker',
    });
  }
  let runs!: ReturnType<typeof createLiveRuns>;
  const workerRuns =
    worker !== undefined && isSharedStore(store)
      ? createWorker({
          store,
          ...worker,
          random: options.random ?? Math.random,
          generateId,
          closed: closing.signal,
          runs: () => runs,
        })
      : undefined;
  runs = createLiveRuns({
    store,
    adapter,
    tools,
    system: options.system,
    now,
    generateId,
    random: options.random ?? Math.random,
    inspect: options.inspect,
    closedError: () =>
      new RuntimeClosedError({ message: 'This runtime is closed; create a new one.' }),
    ...(workerRuns === undefined ? {} : { worker: workerRuns }),
  });
  const { withSession } = runs;
  const router =
    worker !== undefined && isSharedStore(store)
      ? createRequestRouter({
          store,
          workerId: worker.id,
          leaseMs: worker.leaseMs,
          generateId: (prefix) => `${worker.id}:${generateId(prefix)}`,
          withSession,
          active: (sessionId) => runs.active(sessionId),
          stillDriving: (sessionId, driver) => runs.stillDriving(sessionId, driver),
          closed: closing.signal,
        })
      : undefined;

  /**
   * Does a request on the session's unfinished run: here, when this runtime drives it (or
   * rebuilds it from the log); with a worker, wherever the run is driven.
   */
  async function request(sessionId: string, request: RunRequest): Promise<void> {
    if (router !== undefined) return router.route(sessionId, request);
    return withSession(sessionId, async () => {
      const driver = await runs.active(sessionId);
      if (driver === undefined || 'elsewhere' in driver) throw noActiveRun(sessionId, request.kind);
      await performRequest(driver, request, { sessionId, generateId });
    });
  }

  return {
    /** Starts a run for a user message. Throws `SessionBusyError` while the session's last run is unfinished (steer instead). */
    async send(input: { sessionId: string; text: string }): Promise<TurnHandle> {
      const { sessionId, text } = checkMethodArgument('send', input);
      return withSession(sessionId, async () => {
        for (let attempt = 1; ; attempt += 1) {
          const facts = await runs.facts(sessionId);
          const open = unfinishedRun(facts);
          if (open) throw busy(sessionId, open.runId);
          const ids = { sessionId, turnId: generateId('turn'), runId: generateId('run') };
          try {
            return await runs.start(ids, [...facts], {
              type: 'run.started',
              input: { text },
              runtimeVersion,
              limits,
              ...(options.system === undefined ? {} : { system: options.system }),
            });
          } catch (error) {
            // Races with other workers, where nothing of this run was stored: another run.started
            // came first (read the session again: it is busy, or that run ended already), or this
            // worker paused past the new run's lease before its run.started.
            const race = ConcurrencyError.isInstance(error) || LeaseLostError.isInstance(error);
            if (!race || attempt >= 5) throw error;
          }
        }
      });
    },

    /** Answers a pending decision: a permission ask (`allow`/`deny`/`abort`) or an indeterminate call (`report-unknown`/`abort`). */
    async decide(input: {
      sessionId: string;
      callId: string;
      decision: PermissionDecision;
      reason?: string;
      inputHash?: string;
    }): Promise<void> {
      const { sessionId, callId, decision, reason, inputHash } = checkMethodArgument(
        'decide',
        input,
      );
      return request(sessionId, {
        kind: 'decide',
        input: {
          callId,
          decision,
          ...(reason === undefined ? {} : { reason }),
          ...(inputHash === undefined ? {} : { inputHash }),
        },
      });
    },

    /** Adds a user message to the session's unfinished run; the model sees it in its next request. */
    async steer(input: { sessionId: string; text: string }): Promise<void> {
      const { sessionId, text } = checkMethodArgument('steer', input);
      return request(sessionId, { kind: 'steer', input: { text } });
    },

    /** Stops the session's unfinished run; it ends `aborted` (I10). Resolves once the stop is durable. */
    async stop(input: { sessionId: string; reason?: string }): Promise<void> {
      const { sessionId, reason } = checkMethodArgument('stop', input);
      return request(sessionId, {
        kind: 'stop',
        input: reason === undefined ? {} : { reason },
      });
    },

    /** The decisions a person owes in this session. */
    async pending(sessionId: string): Promise<PendingDecision[]> {
      return projectTurn(await runs.facts(checkSessionId(sessionId, 'pending'))).pending;
    },

    /** The messages the model would see next, projected from the log. */
    async history(sessionId: string): Promise<ModelMessage[]> {
      const facts = await runs.facts(checkSessionId(sessionId, 'history'));
      return projectHistory([...facts], { provider: adapter.provider });
    },

    /** The session's durable log. */
    async facts(sessionId: string): Promise<Fact[]> {
      return store.read(checkSessionId(sessionId, 'facts'));
    },

    /**
     * Rehydrates every unfinished run found in the store (after a restart): no tool is run again
     * and no request is re-sent implicitly (I8). Returns what it found, with a handle per run.
     * A session that cannot be read, or a run that cannot be rebuilt, is reported `damaged` and
     * left as it is; the other runs still resume.
     */
    async recover(): Promise<RecoveredRun[]> {
      const report: RecoveredRun[] = [];
      // openRuns() reads what it needs of every session first: findings() then holds what that
      // reading found (a session it left out as unreadable, a torn tail it cut).
      const openRuns = await store.openRuns();
      const findingsOf = async (sessionId: string | undefined) =>
        (await store.findings()).filter((finding) => finding.sessionId === sessionId);
      const unreadable = [
        ...new Set(
          (await store.findings())
            .filter((finding) => finding.kind === 'unreadable')
            .map((finding) => finding.sessionId),
        ),
      ];
      for (const sessionId of unreadable) {
        const found = await findingsOf(sessionId);
        report.push({
          sessionId,
          runId: undefined,
          interruptedIn: undefined,
          status: 'damaged',
          damage: found
            .filter((finding) => finding.kind === 'unreadable')
            .map((finding) => finding.message),
          findings: found,
        });
      }
      for (const { sessionId, runId } of openRuns) {
        if (runs.has(sessionId) || unreadable.includes(sessionId)) continue;
        try {
          const recovered = await withSession(sessionId, () => runs.recover(sessionId, runId));
          if (recovered === undefined) continue;
          report.push(
            recovered.status === 'damaged'
              ? { ...recovered, findings: await findingsOf(sessionId) }
              : recovered,
          );
        } catch (error) {
          // One session's log that breaks a projection is that session's damage; a closed or
          // failing store is everyone's, and is thrown.
          if (TurnlogError.isTurnlogError(error)) throw error;
          report.push({
            sessionId,
            runId,
            interruptedIn: undefined,
            status: 'damaged',
            damage: [
              `recovering the run failed: ${error instanceof Error ? error.message : String(error)}`,
            ],
            findings: await findingsOf(sessionId),
          });
        }
      }
      return report;
    },

    /**
     * Closes the store. Live runs are detached, not ended: they stay unfinished in the log and
     * `recover()` resumes them later (stop them first to end them).
     */
    /** This runtime as a worker on a shared store (`undefined` on a store for one process). */
    worker: worker === undefined ? undefined : { id: worker.id, leaseMs: worker.leaseMs },

    async close(): Promise<void> {
      if (runs.closed) return;
      closing.abort(
        new RuntimeClosedError({ message: 'This runtime is closed; create a new one.' }),
      );
      await runs.close(
        new RuntimeClosedError({
          message:
            'The runtime was closed before this run ended; it stays unfinished in the log: call recover() on a new runtime to resume it.',
        }),
      );
      await store.close();
    },
  };
}

export type Runtime = ReturnType<typeof createRuntime>;

function busy(sessionId: string, runId: string): SessionBusyError {
  return new SessionBusyError({
    message:
      `Session ${sessionId} has an unfinished run (${runId}); add to it with runtime.steer(), answer ` +
      'its pending decisions with runtime.decide(), end it with runtime.stop(), or call runtime.recover() after a restart.',
    sessionId,
    runId,
  });
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
