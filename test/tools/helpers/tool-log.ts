import type {
  CommitFact,
  Fact,
  ProposedFact,
  RunLimits,
  ToolCallRecord,
} from '../../../events/facts.ts';
import { memoryStore } from '../../../store/memory/memory-store.ts';
import type { CallSettler, DecidedPermission, SettleContext } from '../../../tools/tool.ts';
import { newFact, testLimits } from '../../helpers/fact-builder.ts';

/**
 * A session log for tool runtime tests: `commit` appends to a `memoryStore` with the runtime's
 * "commit, then transition" semantics (false on a known id, false after `stop()`), and
 * `context()` builds the `SettleContext` of one step.
 */
export function createToolLog(
  options: { sessionId?: string; runId?: string; limits?: Partial<RunLimits> } = {},
) {
  const sessionId = options.sessionId ?? 'session_1';
  const runId = options.runId ?? 'run_1';
  const store = memoryStore();
  const controller = new AbortController();
  const limits: RunLimits = { ...testLimits, ...options.limits };
  let accepting = true;
  let counter = 0;
  let facts: Fact[] = [];

  const commit: CommitFact = async (draft) => {
    if (!accepting) return false;
    counter += 1;
    const fact = newFact(draft, {
      at: '2026-01-01T00:00:00.000Z',
      sessionId,
      runId,
      id: draft.id ?? `fact_${counter}`,
    });
    const { appended } = await store.append(sessionId, [fact]);
    if (appended.length === 0) return false;
    facts = [...facts, ...appended];
    return true;
  };

  // One append for several facts, as the run driver's commitAll.
  const commitAll = async (drafts: readonly ProposedFact[]): Promise<boolean[]> => {
    if (!accepting) return drafts.map(() => false);
    const built = drafts.map((draft) => {
      counter += 1;
      return newFact(draft, {
        at: '2026-01-01T00:00:00.000Z',
        sessionId,
        runId,
        id: draft.id ?? `fact_${counter}`,
      });
    });
    const { appended } = await store.append(sessionId, built);
    facts = [...facts, ...appended];
    const taken = new Set(appended.map((fact) => fact.id));
    return built.map((fact) => taken.has(fact.id));
  };

  return {
    store,
    commit,
    commitAll,
    limits,
    /** The run's abort controller (stop). */
    controller,
    /** Facts committed so far (a snapshot). */
    facts: () => facts,
    /** Stops accepting commits, like the machine after `run.stop.requested`. */
    stopAccepting() {
      accepting = false;
    },
    /** Commits `step.completed` for `calls` and returns the step's settle context. */
    async completeStep(stepId: string, calls: ToolCallRecord[]): Promise<SettleContext> {
      await commit({
        type: 'step.completed',
        id: `${stepId}:completed`,
        stepId,
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage: {
          inputTokens: 1,
          outputTokens: 1,
          reasoningTokens: undefined,
          cachedInputTokens: undefined,
        },
        content: [],
        toolCalls: calls,
        response: { id: undefined, modelId: undefined },
      } satisfies ProposedFact);
      return this.context(stepId);
    },
    context(stepId: string, overrides: Partial<SettleContext> = {}): SettleContext {
      return {
        sessionId,
        runId,
        stepId,
        limits,
        signal: controller.signal,
        commit,
        commitAll,
        facts: facts,
        ...overrides,
      };
    },
    /** Facts of one type committed so far. */
    ofType<TType extends Fact['type']>(type: TType): Extract<Fact, { type: TType }>[] {
      return facts.filter((fact): fact is Extract<Fact, { type: TType }> => fact.type === type);
    },
  };
}

/** A proven call record. */
export function provenCall(
  name: string,
  input: ToolCallRecord['input'],
  callId = 'call_1',
): ToolCallRecord {
  return { callId, name, input, proof: 'raw-bytes' };
}

/** The decision in the log for `callId`, as `run` takes it (undefined when none). */
export function decisionOf(facts: readonly Fact[], callId: string): DecidedPermission | undefined {
  const fact = facts.findLast(
    (candidate) => candidate.type === 'tool.permission.decided' && candidate.callId === callId,
  );
  if (fact?.type !== 'tool.permission.decided') return undefined;
  const decision: DecidedPermission = {
    decision: fact.decision,
    inputHash: fact.inputHash,
    by: fact.by,
  };
  if (fact.reason !== undefined) decision.reason = fact.reason;
  return decision;
}

/** A promise with its resolve function, for tools that wait on the test. */
export function deferred<TValue = void>() {
  let resolve!: (value: TValue) => void;
  const promise = new Promise<TValue>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

/** Decides a call and commits its decision, as the step's actor does (with `step.completed`). */
export async function decideCall(
  runtime: CallSettler,
  call: ToolCallRecord,
  context: SettleContext,
): Promise<boolean> {
  return context.commit(await runtime.decide(call, context));
}

/** Decides a call, then runs it with the decision the log holds (as the turn machine does). */
export async function settleCall(
  runtime: CallSettler,
  log: ReturnType<typeof createToolLog>,
  stepId: string,
  call: ToolCallRecord,
): Promise<void> {
  await decideCall(runtime, call, log.context(stepId));
  const decision = decisionOf(log.facts(), call.callId);
  if (decision === undefined) return;
  await runtime.run(call, decision, log.context(stepId));
}

/** An `allow` by policy bound to `inputHash`. */
export function allowDecision(inputHash: string): DecidedPermission {
  return { decision: 'allow', inputHash, by: 'policy' };
}
