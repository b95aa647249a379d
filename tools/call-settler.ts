import type { Fact, ProposedFact, ToolCallRecord } from '../events/facts.ts';
import { assertNever } from '../events/facts.ts';
import {
  executionSettlement,
  type Settlement,
  settledDraft,
  startedDraft,
  verdictDraft,
} from './call-facts.ts';
import { createKeyedLimiter, type KeyedLimiter } from './concurrency.ts';
import { assertTool } from './define-tool.ts';
import { executeTool } from './execute-tool.ts';
import { idempotencyKey } from './idempotency-key.ts';
import { createLoopGate, type LoopGate } from './loop-gate.ts';
import { evaluatePermission } from './permission-policy.ts';
import { askReconcile, checkOfTool, type ReconcileFinding } from './reconcile-call.ts';
import { settlementText } from './settlement-text.ts';
import type {
  CallSettler,
  DecidedPermission,
  PermissionPolicy,
  PermissionResult,
  SettleContext,
  Tool,
  ToolSet,
} from './tool.ts';
import { toolFactId } from './tool-fact-id.ts';
import { readSecrets, redactedMessage, type ToolSecrets } from './tool-output.ts';
import { type InputValidation, validateToolInput } from './validate-input.ts';

/** Options of `createCallSettler`. */
export interface ToolRuntimeOptions {
  tools: ToolSet;
  /** Runtime-wide permission policy, consulted after each tool's own permission. */
  policy?: PermissionPolicy;
  /** Monotonic clock in milliseconds for `durationMs` (default `performance.now`). */
  now?: () => number;
}

/** A call that may go further: its tool and the schema-derived value to use from now on. */
interface AdmittedCall {
  tool: Tool;
  validation: Extract<InputValidation, { status: 'valid' }>;
}

/** A call's decision, and for a call allowed by policy the `tool.started` it would start with. */
interface CallVerdict {
  decision: ProposedFact;
  start?: ProposedFact;
}

/**
 * Creates the tool runtime: the one place a tool executes. `decide` validates and judges each
 * call of a completed step (the fact it returns is committed with the step), `run` executes the
 * allowed ones at most once each, `abandon` settles calls that will never run or never report.
 * Every failure of a tool (a throw, a bad schema, a timeout) becomes a `tool.settled` fact; only
 * a failing `commit` rejects (I11).
 *
 * @example
 * const runtime = createCallSettler({ tools: { weather } });
 * const decision = await runtime.decide(call, context); // a tool.permission.decided (allow) draft
 * await context.commit(decision);
 * await runtime.run(call, { decision: 'allow', inputHash, by: 'policy' }, context);
 */
export function createCallSettler(options: ToolRuntimeOptions): CallSettler {
  return new ToolCallSettler(options);
}

/**
 * The call settler of one tool set: admission (proof, tool, input), the loop gate and
 * permissions in `decide`; the slot, `tool.started`, execution and settlement in `run`.
 */
class ToolCallSettler implements CallSettler {
  readonly #tools: ToolSet;
  readonly #policy: PermissionPolicy | undefined;
  readonly #now: () => number;
  readonly #limiter: KeyedLimiter = createKeyedLimiter();
  readonly #loopGate: LoopGate = createLoopGate();
  // Guards against two concurrent `run`s of one call in this process; the deterministic
  // `tool.started` id guards across processes.
  readonly #running = new Set<string>();

  constructor({ tools, policy, now = () => performance.now() }: ToolRuntimeOptions) {
    for (const [name, tool] of Object.entries(tools)) assertTool(name, tool);
    this.#tools = tools;
    this.#policy = policy;
    this.#now = now;
  }

  async decide(call: ToolCallRecord, context: SettleContext): Promise<ProposedFact> {
    return (await this.#decide(call, context)).decision;
  }

  async decideStep(
    calls: readonly ToolCallRecord[],
    context: SettleContext,
  ): Promise<ProposedFact[]> {
    const verdicts = await Promise.all(calls.map((call) => this.#decide(call, context)));
    const decisions = verdicts.map(({ decision }) => decision);
    // A person is asked: the run parks first, and its calls start once every answer is in.
    if (decisions.some((fact) => fact.type === 'tool.permission.requested')) return decisions;
    // The first runners the machine spawns take the free slots (the limiter is FIFO and every
    // runner asks for its slot as it starts, in call order); a call waiting for a slot starts
    // later in a write of its own, so a crash never leaves it indeterminate unrun for long.
    const starts = verdicts.flatMap(({ start }) => (start === undefined ? [] : [start]));
    return [...decisions, ...starts.slice(0, Math.max(1, context.limits.toolConcurrency))];
  }

  async #decide(call: ToolCallRecord, context: SettleContext): Promise<CallVerdict> {
    const admitted = await this.#admit(call);
    if ('outcome' in admitted) return { decision: settledDraft(call, context, admitted) };
    const { facts, runId } = context;
    const { inputHash } = admitted.validation;
    if (this.#loopGate.isRepeatedFailure({ facts, runId, name: call.name, inputHash })) {
      const text = settlementText.loopGate(call.name);
      return { decision: settledDraft(call, context, { outcome: 'denied', text }) };
    }
    return this.#judge(call, context, admitted);
  }

  async run(
    call: ToolCallRecord,
    decision: DecidedPermission,
    context: SettleContext,
    execution = 1,
  ): Promise<void> {
    switch (decision.decision) {
      case 'allow': {
        const key = `${context.sessionId}\u0000${context.stepId}\u0000${call.callId}\u0000${execution}`;
        if (this.#running.has(key)) return;
        this.#running.add(key);
        try {
          await this.#runAllowed(call, decision, context, execution);
        } finally {
          this.#running.delete(key);
        }
        return;
      }
      case 'deny':
      case 'report-unknown':
      case 'abort': {
        const text = settlementText.decided(decision, hasStarted(call, context));
        await settle(call, context, { outcome: decidedOutcome[decision.decision], text });
        return;
      }
      default:
        assertNever(decision.decision, 'permission decision');
    }
  }

  checkOf(name: string): 'reconcile' | 'idempotent' | undefined {
    return checkOfTool(Object.hasOwn(this.#tools, name) ? this.#tools[name] : undefined);
  }

  async reconcile(call: ToolCallRecord, recovery: number, context: SettleContext): Promise<void> {
    const kind = `reconciled-${recovery}` as const;
    const id = toolFactId({ stepId: context.stepId, callId: call.callId, kind });
    const finding = await this.#check(call, context);
    const reconciled: ProposedFact = {
      type: 'tool.reconciled',
      id,
      callId: call.callId,
      name: call.name,
      answer: finding.answer,
      ...('reason' in finding && finding.reason !== undefined && { reason: finding.reason }),
    };
    if (finding.answer !== 'done') {
      await context.commit(reconciled);
      return;
    }
    // It took effect: the model gets the real result, as if execute had returned it.
    const tool = this.#tools[call.name] as Tool;
    const secrets = secretsOf(tool, call.input);
    const result = { kind: 'returned' as const, value: finding.output };
    const { limits } = context;
    const settlement = executionSettlement({ result, tool, secrets, limits, durationMs: 0 });
    await context.commitAll([reconciled, settledDraft(call, context, settlement)]);
  }

  /** The call's tool asked (I8: never guessed), in a slot of the run's tool concurrency. */
  async #check(call: ToolCallRecord, context: SettleContext): Promise<ReconcileFinding> {
    const admitted = await this.#admit(call);
    if ('outcome' in admitted) {
      return { answer: 'unknown', reason: `its input is no longer valid: ${admitted.text}` };
    }
    const check = checkOfTool(admitted.tool);
    if (check === 'idempotent') return { answer: 'idempotent' };
    if (check === undefined) {
      return { answer: 'unknown', reason: 'the tool has no reconcile and is not idempotent' };
    }
    let release: () => void;
    try {
      release = await this.#limiter.acquire({
        key: `${context.sessionId}\u0000${context.runId}`,
        limit: context.limits.toolConcurrency,
        signal: context.signal,
      });
    } catch {
      return { answer: 'unknown', reason: 'the run was stopped before reconcile was asked' };
    }
    try {
      const { tool, validation } = admitted;
      return await askReconcile({
        tool,
        input: copyOf(validation.value),
        context: {
          callId: call.callId,
          sessionId: context.sessionId,
          idempotencyKey: idempotencyKey({ ...context, callId: call.callId }),
          signal: context.signal,
        },
        secrets: () => secretsOf(tool, validation.value),
      });
    } finally {
      release();
    }
  }

  async abandon(
    call: ToolCallRecord,
    outcome: 'cancelled' | 'unknown',
    reason: string,
    context: SettleContext,
  ): Promise<void> {
    await settle(call, context, { outcome, text: settlementText.abandoned(outcome, reason) });
  }

  /**
   * I5: a call goes further only with a guard proof, a known tool and a valid input. Returns the
   * tool and the schema-derived value to use from now on, or how the call settles instead.
   */
  async #admit(call: ToolCallRecord): Promise<AdmittedCall | Settlement> {
    if (call.proof === null) return { outcome: 'withheld', text: settlementText.withheld(call) };
    const tool = Object.hasOwn(this.#tools, call.name) ? this.#tools[call.name] : undefined;
    if (tool === undefined) {
      const text = settlementText.unknownTool(call.name, Object.keys(this.#tools));
      return { outcome: 'invalid', text };
    }
    const validation = await validateToolInput({ name: call.name, tool, raw: call.input });
    if (validation.status !== 'valid') return { outcome: validation.status, text: validation.text };
    return { tool, validation };
  }

  /** The tool's permission, then the policy, on copies of the validated input. */
  async #judge(
    call: ToolCallRecord,
    context: SettleContext,
    { tool, validation }: AdmittedCall,
  ): Promise<CallVerdict> {
    let permission: PermissionResult;
    try {
      permission = await evaluatePermission({
        name: call.name,
        tool,
        input: copyOf(validation.value),
        jsonInput: copyOf(validation.json),
        sessionId: context.sessionId,
        policy: this.#policy,
      });
    } catch (error) {
      const message = redactedMessage(error, secretsOf(tool, validation.value));
      const text = settlementText.permissionFailed(message);
      return { decision: settledDraft(call, context, { outcome: 'error', text }) };
    }
    const decision = verdictDraft(call, context, permission, validation);
    if (permission.verdict !== 'allow') return { decision };
    return { decision, start: startedDraft(call, context, validation, 1) };
  }

  /**
   * An allowed call: in a free slot, admitted again, bound to its decision's input, run. The slot
   * is asked for first, before anything is awaited: runners spawned together queue in call
   * order, so the calls whose start the response recorded (`decideStep`) get the free slots.
   */
  async #runAllowed(
    call: ToolCallRecord,
    decision: DecidedPermission,
    context: SettleContext,
    execution: number,
  ): Promise<void> {
    const notStarted: Settlement = { outcome: 'cancelled', text: settlementText.notStarted() };
    let release: () => void;
    try {
      release = await this.#limiter.acquire({
        key: `${context.sessionId}\u0000${context.runId}`,
        limit: context.limits.toolConcurrency,
        signal: context.signal,
      });
    } catch {
      await settle(call, context, notStarted);
      return;
    }
    try {
      // I5: execute only the schema-derived value of the proved input the decision was bound to.
      const admitted = await this.#admit(call);
      if ('outcome' in admitted) {
        await settle(call, context, admitted);
        return;
      }
      const { inputHash } = admitted.validation;
      if (inputHash !== decision.inputHash) {
        const text = settlementText.inputChanged(decision.inputHash, inputHash);
        await settle(call, context, { outcome: 'error', text });
        return;
      }
      if (context.signal.aborted) {
        await settle(call, context, notStarted);
        return;
      }
      await this.#startAndExecute(call, context, admitted, execution);
    } finally {
      release();
    }
  }

  /** Commits `tool.started`, executes once, and settles with what the execution gave. */
  async #startAndExecute(
    call: ToolCallRecord,
    context: SettleContext,
    { tool, validation }: AdmittedCall,
    execution: number,
  ): Promise<void> {
    // I2: tool.started is durable before execute: recorded by the step's response write (a call
    // that started at once, `decideStep`), else committed now. A `false` means another
    // settlement took this call or the run stopped, so nothing executes (I5: at most once per
    // start the machine allows; a second start only after its tool's check said so, I8).
    const draft = startedDraft(call, context, validation, execution);
    const recorded = startedSinceRecovery(context, { id: draft.id, callId: call.callId });
    const started = recorded || (await context.commit(draft));
    if (!started) return;
    const startedAt = this.#now();
    const result = await executeTool({
      tool,
      input: copyOf(validation.value),
      callId: call.callId,
      sessionId: context.sessionId,
      idempotencyKey: idempotencyKey({ ...context, callId: call.callId }),
      signal: context.signal,
      stopGraceMs: context.limits.stopGraceMs,
    });
    const durationMs = Math.max(0, Math.round(this.#now() - startedAt));
    // Read after execute: a tool may learn a secret while running (a fetched token).
    const secrets = secretsOf(tool, validation.value);
    const { limits } = context;
    await settle(call, context, executionSettlement({ result, tool, secrets, limits, durationMs }));
  }
}

/** Commits the call's one `tool.settled`. */
function settle(
  call: ToolCallRecord,
  context: SettleContext,
  settlement: Settlement,
): Promise<boolean> {
  return context.commit(settledDraft(call, context, settlement));
}

/** How a call settles when its decision is not to run it. */
const decidedOutcome = { deny: 'denied', 'report-unknown': 'unknown', abort: 'cancelled' } as const;

/**
 * True when `start` is the call's last fact in the log, recorded since its step completed and
 * the run last recovered: the step's response recorded it, and this process goes on to execute
 * it. A start from before a restart is never one (recovery marked its call indeterminate, I8),
 * nor one the call has settled since.
 */
function startedSinceRecovery(
  context: SettleContext,
  start: { id?: string | undefined; callId: string },
): boolean {
  const { facts, runId, stepId } = context;
  for (let index = facts.length - 1; index >= 0; index -= 1) {
    const fact = facts[index] as Fact;
    if (fact.id === start.id) return true;
    if (fact.runId !== runId) continue;
    if ('callId' in fact && fact.callId === start.callId) return false;
    if (fact.type === 'run.recovered') return false;
    if (fact.type === 'step.completed' && fact.stepId === stepId) return false;
  }
  return false;
}

/** True when the call's `tool.started` is in the log: it may have partly run. */
function hasStarted(call: ToolCallRecord, context: SettleContext): boolean {
  const startedId = toolFactId({ stepId: context.stepId, callId: call.callId, kind: 'started' });
  return context.facts.some((fact) => fact.id === startedId);
}

function secretsOf(tool: Tool, input: unknown): ToolSecrets {
  return readSecrets(() => tool.secrets(copyOf(input)));
}

/** A copy, so neither a permission function nor `execute` can change the recorded input. */
function copyOf<TValue>(value: TValue): TValue {
  try {
    return structuredClone(value);
  } catch {
    // A transform produced something uncloneable (a function); hand it over as it is.
    return value;
  }
}
