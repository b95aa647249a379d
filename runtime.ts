import type { InspectionEvent, Observer } from 'xstate';
import { type AiSdkLanguageModel, aiSdkAdapter } from './adapters/ai-sdk-adapter.ts';
import type { ModelAdapter } from './adapters/model-adapter.ts';
import type { Fact, PermissionDecision, RunLimits } from './events/facts.ts';
import { createIdGenerator, type IdGenerator } from './events/ids.ts';
import type { ModelMessage } from './events/messages.ts';
import { projectHistory } from './events/project-history.ts';
import { type PendingDecision, projectTurn } from './events/project-turn.ts';
import { createLiveRuns, type RecoveredRun, unfinishedRun } from './machines/live-runs.ts';
import type { TurnHandle } from './machines/turn-channel.ts';
import {
  InvalidArgumentError,
  NoActiveRunError,
  RuntimeClosedError,
  SessionBusyError,
} from './runtime-errors.ts';
import type { EventStore } from './store/event-store.ts';
import { lowdbStore } from './store/lowdb-store.ts';
import { validateDecision } from './tools/permission-policy.ts';
import type { PermissionPolicy } from './tools/tool.ts';
import { createToolSetSource, type ToolsOption } from './tools/tool-set-source.ts';

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
  /**
   * The tools: a record, or a function returning one that is read when each run starts (the
   * run keeps that set until it ends), e.g. `() => ({ ...watch.tools, weather })`.
   */
  tools?: ToolsOption;
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
export function createRuntime(options: RuntimeOptions) {
  const now = options.now ?? Date.now;
  const adapter = toAdapter(options.model, now);
  const tools = createToolSetSource({ tools: options.tools, policy: options.policy });
  const store = options.store ?? lowdbStore({ dir: '.turnlog' });
  const limits = resolveLimits(options.limits);
  const generateId = options.generateId ?? createIdGenerator({ now });
  const locks = new Map<string, Promise<unknown>>();
  let closed = false;

  /** Serializes the public operations on one session. */
  function withSession<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    if (closed) {
      return Promise.reject(
        new RuntimeClosedError({ message: 'This runtime is closed; create a new one.' }),
      );
    }
    const previous = locks.get(sessionId) ?? Promise.resolve();
    const result = previous.then(work, work);
    const tail = result.catch(() => {});
    locks.set(sessionId, tail);
    tail.then(() => {
      if (locks.get(sessionId) === tail) locks.delete(sessionId);
    });
    return result;
  }

  const runs = createLiveRuns({
    store,
    adapter,
    tools,
    system: options.system,
    now,
    generateId,
    random: options.random ?? Math.random,
    inspect: options.inspect,
    withSession,
  });

  /** The session's unfinished run, live or rebuilt from the log; `NoActiveRunError` if none. */
  async function activeRun(sessionId: string, operation: string) {
    const driver = await runs.active(sessionId);
    if (driver === undefined) {
      throw new NoActiveRunError({
        message: `runtime.${operation}(): session ${sessionId} has no unfinished run; start one with runtime.send().`,
        sessionId,
      });
    }
    return driver;
  }

  return {
    /** Starts a run for a user message. Throws `SessionBusyError` while the session's last run is unfinished (steer instead). */
    async send(input: { sessionId: string; text: string }): Promise<TurnHandle> {
      const sessionId = requireText(input?.sessionId, 'sessionId');
      const text = requireText(input?.text, 'text');
      return withSession(sessionId, async () => {
        const facts = await runs.facts(sessionId);
        const open = unfinishedRun(facts);
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
        return runs.start(ids, [...facts], {
          type: 'run.started',
          input: { text },
          runtimeVersion,
          limits,
          ...(options.system === undefined ? {} : { system: options.system }),
        });
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
      const sessionId = requireText(input?.sessionId, 'sessionId');
      const callId = requireText(input?.callId, 'callId');
      return withSession(sessionId, async () => {
        const driver = await activeRun(sessionId, 'decide');
        const view = projectTurn(driver.facts).runs.at(-1);
        const decided = driver.facts.flatMap((fact) =>
          fact.type === 'tool.permission.decided' && fact.runId === view?.runId ? [fact] : [],
        );
        const checked = validateDecision({
          pending: view?.pending ?? [],
          decided,
          decision: { ...input, callId },
        });
        if (checked.status === 'no-op') return;
        await driver.commit({
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
    async steer(input: { sessionId: string; text: string }): Promise<void> {
      const sessionId = requireText(input?.sessionId, 'sessionId');
      const text = requireText(input?.text, 'text');
      return withSession(sessionId, async () => {
        await (await activeRun(sessionId, 'steer')).commit({
          type: 'steering.received',
          messageId: generateId('message'),
          text,
        });
      });
    },

    /** Stops the session's unfinished run; it ends `aborted` (I10). Resolves once the stop is durable. */
    async stop(input: { sessionId: string; reason?: string }): Promise<void> {
      const sessionId = requireText(input?.sessionId, 'sessionId');
      return withSession(sessionId, async () => {
        await (await activeRun(sessionId, 'stop')).commit({
          type: 'run.stop.requested',
          reason: input.reason ?? 'stopped by the user',
        });
      });
    },

    /** The decisions a person owes in this session. */
    async pending(sessionId: string): Promise<PendingDecision[]> {
      return projectTurn(await runs.facts(requireText(sessionId, 'sessionId'))).pending;
    },

    /** The messages the model would see next, projected from the log. */
    async history(sessionId: string): Promise<ModelMessage[]> {
      const facts = await runs.facts(requireText(sessionId, 'sessionId'));
      return projectHistory([...facts], { provider: adapter.provider });
    },

    /** The session's durable log. */
    async facts(sessionId: string): Promise<Fact[]> {
      return store.read(requireText(sessionId, 'sessionId'));
    },

    /**
     * Rehydrates every unfinished run found in the store (after a restart): no tool is run again
     * and no request is re-sent implicitly (I8). Returns what it found, with a handle per run.
     */
    async recover(): Promise<RecoveredRun[]> {
      const report: RecoveredRun[] = [];
      for (const open of await store.openRuns()) {
        if (runs.has(open.sessionId)) continue;
        report.push(
          await withSession(open.sessionId, () => runs.recover(open.sessionId, open.runId)),
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

function requireText(value: unknown, argument: string): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw new InvalidArgumentError({
      message: `${argument} must be a non-empty string (got ${JSON.stringify(value)}).`,
      argument,
    });
  }
  return value;
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

const minToolOutputChars = 500;

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
    // The truncation marker alone takes about 150 characters: a smaller limit cannot hold it.
    if (key === 'toolOutputChars' && value < minToolOutputChars) {
      throw new InvalidArgumentError({
        message: `limits.toolOutputChars must be at least ${minToolOutputChars} (got ${value}): the model must see what was cut.`,
        argument: 'limits.toolOutputChars',
      });
    }
  }
  return limits;
}
