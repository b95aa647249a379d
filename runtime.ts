import { randomUUID } from 'node:crypto';
import type { InspectionEvent, Observer } from 'xstate';
import { type AiSdkLanguageModel, aiSdkAdapter } from './adapters/ai-sdk-adapter.ts';
import type { ModelAdapter } from './adapters/model-adapter.ts';
import type { Fact, FactOf, PermissionDecision, RunLimits } from './events/facts.ts';
import { createIdGenerator, type IdGenerator } from './events/ids.ts';
import { hashText } from './events/json.ts';
import type { ModelMessage } from './events/messages.ts';
import { projectHistory } from './events/project-history.ts';
import { type PendingDecision, projectTurn } from './events/project-turn.ts';
import { type RunFingerprint, toolFingerprints } from './events/run-fingerprint.ts';
import { TurnlogError } from './events/turnlog-error.ts';
import { LiveRuns, type RecoveredRun } from './machines/effects/live-runs.ts';
import { defaultMaxRetryAfterMs } from './machines/effects/retry-timer-actor.ts';
import { noActiveRun, performRequest, type RunRequest } from './machines/effects/run-requests.ts';
import type { TurnHandle } from './machines/effects/turn-channel.ts';
import {
  defaultLeaseMs,
  isSharedStore,
  type SharedStore,
} from './machines/effects/worker/worker-leases.ts';
import { WorkerTenure } from './machines/effects/worker/worker-tenure.ts';
import { unfinishedRun } from './machines/pure/resume-run.ts';
import { turnMachineVersion } from './machines/pure/turn-machine.ts';
import { RunTelemetry } from './observability/run-telemetry.ts';
import type { TelemetryOptions } from './observability/telemetry-options.ts';
import { checkMethodArgument, checkRuntimeOptions, checkSessionId } from './runtime-arguments.ts';
import { InvalidArgumentError, RuntimeClosedError, SessionBusyError } from './runtime-errors.ts';
import { type ModelSettings, runSettings } from './runtime-settings.ts';
import { ConcurrencyError, type EventStore, type StoreFinding } from './store/event-store.ts';
import { lowdbStore } from './store/folder/lowdb-store.ts';
import { LeaseLostError } from './store/run-leases.ts';
import type { OwnTools, RuntimeTools } from './tools/provider-tool.ts';
import type { PermissionPolicy } from './tools/tool.ts';
import { createToolSetSource, type ToolSetSource } from './tools/tool-set-source.ts';

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
   * Sampling settings (`temperature`, `topP`, `topK`, `presencePenalty`, `frequencyPenalty`,
   * `seed`, `stopSequences`), provider options and `maxOutputTokens` for every run's requests;
   * `send({ settings })` overrides them for one run. Recorded in each `run.started`.
   */
  settings?: ModelSettings;
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
  /**
   * OpenTelemetry traces and metrics of every run (README, "Production"), through
   * `@opentelemetry/api` when it is installed (an optional peer; without it nothing is loaded or
   * recorded): the globally registered providers by default, or the tracer and meter given here.
   * `false`: none, and the API is not loaded.
   */
  telemetry?: TelemetryOptions | false;
}

/** A worker's settings (`createRuntime({ worker })`). */
export interface WorkerOptions {
  /** The worker's id (a key in the store: well-formed text without NUL). Default: a random id. */
  id?: string;
  /**
   * How long a run's lease lasts without a renewal (renewed every `leaseMs / 3`; expired leases
   * are looked for every `leaseMs / 4`). Default 15,000; from 100 to 3,600,000 (an hour), else
   * `InvalidArgumentError`.
   */
  leaseMs?: number;
  /**
   * Where the leases are renewed from. `'thread'`: a worker thread with a database connection of
   * its own, which no work on the event loop (a large tool output, a tool that blocks) holds up;
   * it needs a store that can open one (`postgresStore` with `connectionString` or the `PG*`
   * variables, not a `pool` of yours), else `InvalidArgumentError`. `'loop'`: a timer on the
   * event loop. Default `'thread'` when the store can, else `'loop'` (README, "Leases under
   * load").
   */
  renewal?: 'thread' | 'loop';
}

export type { ModelSettings, RecoveredRun };

/** What `runtime.send()` takes: one user message of a session. */
export interface SendInput {
  sessionId: string;
  text: string;
  /** Files the user attached: their bytes as base64, with their media type. */
  files?: UserFile[];
  /** The `runId` of the session's last run, whose answer this run replaces (`regenerate()`). */
  regenerates?: string;
  /** Sampling and provider options of this run's requests, over `createRuntime`'s `settings`. */
  settings?: ModelSettings;
}

/** What `runtime.follow()` takes besides the session. */
export interface FollowOptions {
  /** Lets the handle go when it aborts: the runtime keeps nothing of it (see `follow`). */
  signal?: AbortSignal;
}

/** A file attached to a user message (`send({ files })`). */
export interface UserFile {
  mediaType: string;
  /** The bytes, base64 (no `data:` prefix). */
  data: string;
  filename?: string;
}

/**
 * A turnlog runtime (`createRuntime`): the store, the model adapter, the tools and one live turn
 * machine per running session.
 */
export interface Runtime {
  /**
   * Starts a run for a user message: its text and any files attached (images, PDFs: at most 8,
   * 4 MiB each, recorded in the log as base64; the model gets them as file parts). With
   * `regenerates`, the run answers the same input again, superseding the session's last run
   * (which must have ended); the UI then shows the newer answer only. Throws `SessionBusyError`
   * while the session's last run is unfinished (steer instead).
   */
  send(input: SendInput): Promise<TurnHandle>;
  /** Answers a pending decision: a permission ask (`allow`/`deny`/`abort`) or an indeterminate call (`report-unknown`/`abort`). */
  decide(input: {
    sessionId: string;
    callId: string;
    decision: PermissionDecision;
    reason?: string;
    inputHash?: string;
  }): Promise<void>;
  /** Adds a user message to the session's unfinished run; the model sees it in its next request. */
  steer(input: { sessionId: string; text: string }): Promise<void>;
  /** Stops the session's unfinished run; it ends `aborted` (I10). Resolves once the stop is durable. */
  stop(input: { sessionId: string; reason?: string }): Promise<void>;
  /**
   * A handle of the session's unfinished run, on any worker: its facts from `run.started` (read
   * from the log), then live until `run.ended`; `undefined` when the session has no unfinished
   * run. What a chat route serves to a client that reconnects (`resumeStream()`), with no map of
   * handles to keep: each call is a new handle, which costs the runtime a few hundred bytes until
   * the run ends, or until `signal` aborts: the handle is then let go (its events end, its `done`
   * rejects with the signal's reason) and the runtime keeps nothing of it; a run nobody drives
   * here whose handles were all let go is no longer followed. A server following a run for a
   * request passes a signal it aborts when the response ends or the client leaves, so a run
   * waiting long for a person costs nothing per reload.
   *
   * @example
   * const controller = new AbortController();
   * const turn = await runtime.follow('s-1', { signal: controller.signal });
   * // ... stream turn.events to the client; when it leaves:
   * controller.abort();
   */
  follow(sessionId: string, options?: FollowOptions): Promise<TurnHandle | undefined>;
  /** The decisions a person owes in this session. */
  pending(sessionId: string): Promise<PendingDecision[]>;
  /** The messages the model would see next, projected from the log. */
  history(sessionId: string): Promise<ModelMessage[]>;
  /** The session's durable log. */
  facts(sessionId: string): Promise<Fact[]>;
  /**
   * Rehydrates every unfinished run found in the store (after a restart): no tool is run again
   * and no request is re-sent implicitly (I8). Returns what it found, with a handle per run.
   * A session that cannot be read, or a run that cannot be rebuilt, is reported `damaged` and
   * left as it is; the other runs still resume. With a worker (a shared store), only the runs
   * nobody drives and no worker parked: those whose worker died (lease expired or handed over)
   * and those no worker ever leased. A run waiting for a person whose worker released its lease
   * is left as it is until a decision comes, so a worker's `recover()` costs nothing per parked
   * run (README, "Running many workers").
   */
  recover(): Promise<RecoveredRun[]>;
  /**
   * This runtime as a worker on a shared store (`undefined` on a store for one process).
   * `renewal` says where its leases are renewed from now: `'thread'` once its renewal thread is
   * up (`worker.renewal`; it starts with the runtime), `'loop'` before that, without one, and if
   * the thread ever fails (a process warning says so).
   */
  worker:
    | { readonly id: string; readonly leaseMs: number; readonly renewal: 'thread' | 'loop' }
    | undefined;
  /**
   * What a run started now would be run with: turnlog's and the machine's versions, the model,
   * the tools (a tools function is read) and the system prompt's hash. Compare it with a parked
   * run's (`recordedFingerprint` of its `run.started`) with `compareFingerprints`.
   */
  fingerprint(): RunFingerprint;
  /**
   * Closes the store. Live runs are detached, not ended: they stay unfinished in the log and
   * `recover()` resumes them later (stop them first to end them).
   */
  close(): Promise<void>;
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
export function createRuntime<TTools extends RuntimeTools = RuntimeTools>(
  options: RuntimeOptions<TTools>,
): Runtime {
  checkRuntimeOptions(options);
  const now = options.now ?? Date.now;
  const adapter = toAdapter(options.model, now);
  const tools = createToolSetSource({
    tools: options.tools,
    // The policy is only ever asked about the run's own tools, each with its validated input.
    policy: options.policy as PermissionPolicy | undefined,
  });
  const store = options.store ?? lowdbStore({ dir: '.turnlog' });
  return new DefaultRuntime({
    store,
    adapter,
    tools,
    system: options.system,
    limits: { ...defaultLimits, ...options.limits },
    settings: options.settings,
    inspect: options.inspect,
    now,
    generateId: options.generateId ?? createIdGenerator({ now }),
    random: options.random ?? Math.random,
    worker: workerSettings(store, options.worker),
    telemetry:
      options.telemetry === false
        ? undefined
        : new RunTelemetry(options.telemetry ?? {}, { shared: isSharedStore(store) }),
  });
}

/** What a runtime is built from: `createRuntime`'s options with their defaults. */
interface RuntimeParts {
  store: EventStore;
  adapter: ModelAdapter;
  tools: ToolSetSource;
  system: string | undefined;
  limits: RunLimits;
  settings: ModelSettings | undefined;
  inspect: RuntimeOptions['inspect'];
  now: () => number;
  generateId: IdGenerator;
  random: () => number;
  /** With a store several processes share: this worker's settings. */
  worker: WorkerSettings | undefined;
  /** Traces and metrics, unless turned off. */
  telemetry: RunTelemetry | undefined;
}

interface WorkerSettings {
  store: SharedStore;
  id: string;
  leaseMs: number;
  renewal: 'thread' | 'loop';
}

/** A runtime's worker settings: on a store several processes share, always; else none. */
function workerSettings(
  store: EventStore,
  worker: WorkerOptions | undefined,
): WorkerSettings | undefined {
  if (!isSharedStore(store)) {
    if (worker === undefined) return undefined;
    throw new InvalidArgumentError({
      message:
        'createRuntime(): worker needs a store several processes share (postgresStore(…)); this store serves one process, whose runtime drives every run itself.',
      argument: 'worker',
    });
  }
  const threadable = store.leaseRenewalThread?.() !== undefined;
  if (worker?.renewal === 'thread' && !threadable) {
    throw new InvalidArgumentError({
      message:
        "createRuntime(): worker.renewal 'thread' needs a store that can open a connection of its own in a thread (postgresStore with connectionString or the PG* variables); this one cannot (a postgresStore given a pool of yours): leave renewal out, or pass 'loop'.",
      argument: 'worker',
    });
  }
  return {
    store,
    id: worker?.id ?? `worker-${randomUUID()}`,
    leaseMs: worker?.leaseMs ?? defaultLeaseMs,
    renewal: worker?.renewal ?? (threadable ? 'thread' : 'loop'),
  };
}

/** The runtime's methods, each its own bound property (see the constructor). */
const runtimeMethods = [
  'send',
  'decide',
  'steer',
  'stop',
  'follow',
  'pending',
  'history',
  'facts',
  'recover',
  'fingerprint',
  'close',
] as const satisfies readonly (keyof Runtime)[];

/** The runtime `createRuntime` returns: its live runs and, on a shared store, its worker. */
class DefaultRuntime implements Runtime {
  readonly worker: Runtime['worker'];
  readonly #parts: RuntimeParts;
  readonly #store: EventStore;
  readonly #closing = new AbortController();
  readonly #runs: LiveRuns;
  /** With a store several processes share: the worker, which routes requests to runs driven elsewhere. */
  readonly #worker: WorkerTenure | undefined;

  constructor(parts: RuntimeParts) {
    const { store, generateId, random } = parts;
    this.#parts = parts;
    this.#store = store;
    this.#worker =
      parts.worker &&
      new WorkerTenure({
        ...parts.worker,
        random,
        now: parts.now,
        generateId,
        closed: this.#closing.signal,
        runs: () => this.#runs,
        telemetry: parts.telemetry,
      });
    const tenure = this.#worker;
    this.worker = tenure && {
      id: tenure.id,
      leaseMs: tenure.leaseMs,
      get renewal() {
        return tenure.renewal;
      },
    };
    this.#runs = new LiveRuns({
      // A worker's drivers append through it: renewals due are made around each append.
      store: parts.worker && this.#worker ? this.#worker.renewingAround(parts.worker.store) : store,
      adapter: parts.adapter,
      tools: parts.tools,
      system: parts.system,
      now: parts.now,
      generateId,
      random,
      inspect: parts.inspect,
      closedError: () =>
        new RuntimeClosedError({ message: 'This runtime is closed; create a new one.' }),
      ...(this.#worker === undefined ? {} : { tenure: this.#worker }),
      telemetry: parts.telemetry,
    });
    // Own, bound methods, as when the runtime was an object literal: they work detached
    // (`const { send } = runtime`) and are kept by a spread (`{ ...runtime, send }`).
    for (const name of runtimeMethods) Object.assign(this, { [name]: this[name].bind(this) });
  }

  async send(input: SendInput): Promise<TurnHandle> {
    const { sessionId, text, files, regenerates, settings } = checkMethodArgument('send', input);
    // The caller's context parents the run's first span (read before the session's queue).
    const parent = await this.#parts.telemetry?.callerContext();
    const started = runSettings(this.#parts.limits, this.#parts.settings, settings);
    const message = { text, ...(files === undefined ? {} : { files }) };
    return this.#runs.withSession(sessionId, () =>
      this.#startRun({ sessionId, input: message, regenerates, started, parent }),
    );
  }

  async decide(input: Parameters<Runtime['decide']>[0]): Promise<void> {
    const { sessionId, callId, decision, reason, inputHash } = checkMethodArgument('decide', input);
    return this.#request(sessionId, {
      kind: 'decide',
      input: {
        callId,
        decision,
        ...(reason === undefined ? {} : { reason }),
        ...(inputHash === undefined ? {} : { inputHash }),
      },
    });
  }

  async steer(input: { sessionId: string; text: string }): Promise<void> {
    const { sessionId, text } = checkMethodArgument('steer', input);
    return this.#request(sessionId, { kind: 'steer', input: { text } });
  }

  async stop(input: { sessionId: string; reason?: string }): Promise<void> {
    const { sessionId, reason } = checkMethodArgument('stop', input);
    return this.#request(sessionId, {
      kind: 'stop',
      input: reason === undefined ? {} : { reason },
    });
  }

  async follow(sessionId: string, options?: FollowOptions): Promise<TurnHandle | undefined> {
    const id = checkSessionId(sessionId, 'follow');
    return this.#runs.withSession(id, () => this.#runs.follow(id, options?.signal));
  }

  async pending(sessionId: string): Promise<PendingDecision[]> {
    return projectTurn(await this.#runs.facts(checkSessionId(sessionId, 'pending'))).pending;
  }

  async history(sessionId: string): Promise<ModelMessage[]> {
    const facts = await this.#runs.facts(checkSessionId(sessionId, 'history'));
    return projectHistory([...facts], { provider: this.#parts.adapter.provider });
  }

  async facts(sessionId: string): Promise<Fact[]> {
    return this.#store.read(checkSessionId(sessionId, 'facts'));
  }

  async recover(): Promise<RecoveredRun[]> {
    await this.#parts.telemetry?.ready();
    // openRuns() reads what it needs of every session first: findings() then holds what that
    // reading found (a session it left out as unreadable, a torn tail it cut). A worker reads
    // only the runs nobody drives and no worker parked, by index (architecture/workers.md).
    const openRuns = await this.#runs.runsToRecover();
    const unreadable = await this.#unreadableSessions();
    const report: RecoveredRun[] = [];
    for (const sessionId of unreadable) report.push(await this.#unreadable(sessionId));
    for (const { sessionId, runId } of openRuns) {
      if (this.#runs.has(sessionId) || unreadable.includes(sessionId)) continue;
      const recovered = await this.#recoverRun(sessionId, runId);
      if (recovered !== undefined) report.push(recovered);
    }
    return report;
  }

  fingerprint(): RunFingerprint {
    const { adapter, tools, system } = this.#parts;
    return {
      turnlogVersion: runtimeVersion,
      machineVersion: turnMachineVersion,
      model: { provider: adapter.provider, modelId: adapter.modelId },
      tools: toolFingerprints(tools.current().toolDefinitions),
      systemHash: system === undefined ? undefined : hashText(system),
    };
  }

  async close(): Promise<void> {
    if (this.#runs.closed) return;
    this.#closing.abort(
      new RuntimeClosedError({ message: 'This runtime is closed; create a new one.' }),
    );
    await this.#runs.close(
      new RuntimeClosedError({
        message:
          'The runtime was closed before this run ended; it stays unfinished in the log: call recover() on a new runtime to resume it.',
      }),
    );
    this.#parts.telemetry?.close();
    await this.#store.close();
  }

  /** Under the session's lock: starts a run unless the session has an unfinished one. */
  async #startRun({
    sessionId,
    input,
    regenerates,
    started,
    parent,
  }: {
    sessionId: string;
    input: FactOf<'run.started'>['input'];
    regenerates: string | undefined;
    started: ReturnType<typeof runSettings>;
    parent: unknown;
  }): Promise<TurnHandle> {
    const { generateId, system } = this.#parts;
    for (let attempt = 1; ; attempt += 1) {
      const facts = await this.#runs.facts(sessionId);
      const open = unfinishedRun(facts);
      if (open) throw busy(sessionId, open.runId);
      if (regenerates !== undefined) checkRegenerates(facts, sessionId, regenerates);
      const ids = { sessionId, turnId: generateId('turn'), runId: generateId('run') };
      try {
        return await this.#runs.start(
          ids,
          [...facts],
          {
            type: 'run.started',
            input,
            ...(regenerates === undefined ? {} : { regenerates }),
            runtimeVersion,
            ...started,
            ...(system === undefined ? {} : { system }),
          },
          parent,
        );
      } catch (error) {
        // Races with other workers, where nothing of this run was stored: another run.started
        // came first (read the session again: it is busy, or that run ended already), or this
        // worker paused past the new run's lease before its run.started.
        const race = ConcurrencyError.isInstance(error) || LeaseLostError.isInstance(error);
        if (!race || attempt >= 5) throw error;
      }
    }
  }

  /**
   * Does a request on the session's unfinished run: here, when this runtime drives it (or
   * rebuilds it from the log); with a worker, wherever the run is driven.
   */
  async #request(sessionId: string, request: RunRequest): Promise<void> {
    await this.#parts.telemetry?.ready();
    if (this.#worker !== undefined) return this.#worker.route(sessionId, request);
    return this.#runs.withSession(sessionId, async () => {
      const driver = await this.#runs.active(sessionId);
      if (driver === undefined || 'elsewhere' in driver) throw noActiveRun(sessionId, request.kind);
      await performRequest(driver, request, { sessionId, generateId: this.#parts.generateId });
    });
  }

  /** The sessions the store could not read (their findings say so). */
  async #unreadableSessions(): Promise<(string | undefined)[]> {
    const findings = await this.#store.findings();
    const unreadable = findings.filter((finding) => finding.kind === 'unreadable');
    return [...new Set(unreadable.map((finding) => finding.sessionId))];
  }

  /** The report of a session the store could not read. */
  async #unreadable(sessionId: string | undefined): Promise<RecoveredRun> {
    const found = await this.#findingsOf(sessionId);
    return {
      sessionId,
      runId: undefined,
      interruptedIn: undefined,
      status: 'damaged',
      damage: found
        .filter((finding) => finding.kind === 'unreadable')
        .map((finding) => finding.message),
      findings: found,
    };
  }

  /** Recovers one unfinished run, under its session's lock; a run that breaks is reported damaged. */
  async #recoverRun(sessionId: string, runId: string): Promise<RecoveredRun | undefined> {
    try {
      const recovered = await this.#runs.withSession(sessionId, () =>
        this.#runs.recover(sessionId, runId),
      );
      if (recovered?.status !== 'damaged') return recovered;
      return { ...recovered, findings: await this.#findingsOf(sessionId) };
    } catch (error) {
      // One session's log that breaks a projection is that session's damage; a closed or
      // failing store is everyone's, and is thrown.
      if (TurnlogError.isTurnlogError(error)) throw error;
      return {
        sessionId,
        runId,
        interruptedIn: undefined,
        status: 'damaged',
        damage: [
          `recovering the run failed: ${error instanceof Error ? error.message : String(error)}`,
        ],
        findings: await this.#findingsOf(sessionId),
      };
    }
  }

  /** What the store found in the session's stored form. */
  async #findingsOf(sessionId: string | undefined): Promise<StoreFinding[]> {
    return (await this.#store.findings()).filter((finding) => finding.sessionId === sessionId);
  }
}

/** `send({ regenerates })` names the session's last run, or it is refused. */
function checkRegenerates(facts: readonly Fact[], sessionId: string, regenerates: string): void {
  const last = facts.findLast((fact) => fact.type === 'run.started');
  if (last?.runId === regenerates) return;
  throw new InvalidArgumentError({
    message: `runtime.send(): regenerates must be the runId of session ${sessionId}'s last run (${last?.runId ?? 'it has none'}), not ${regenerates}: only the last answer can be regenerated.`,
    argument: 'regenerates',
  });
}

function busy(sessionId: string, runId: string): SessionBusyError {
  return new SessionBusyError({
    message:
      `Session ${sessionId} has an unfinished run (${runId}); add to it with runtime.steer(), answer ` +
      'its pending decisions with runtime.decide(), end it with runtime.stop(), or call runtime.recover() after a restart.',
    sessionId,
    runId,
  });
}

/** The model adapter of `createRuntime`'s `model` option: a `ModelAdapter` as it is, else the AI SDK adapter. */
export function toAdapter(model: RuntimeOptions['model'], now: () => number): ModelAdapter {
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
