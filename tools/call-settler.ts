import type { ProposedFact, ToolCallRecord, ToolOutcome } from '../events/facts.ts';
import { assertNever } from '../events/facts.ts';
import type { JsonValue } from '../events/json.ts';
import { createKeyedLimiter } from './concurrency.ts';
import { assertTool } from './define-tool.ts';
import { executeTool } from './execute-tool.ts';
import { createLoopGate } from './loop-gate.ts';
import { evaluatePermission } from './permission-policy.ts';
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
import {
  formatToolOutput,
  readSecrets,
  redactedMessage,
  type ToolSecrets,
  truncateText,
} from './tool-output.ts';
import { type InputValidation, validateToolInput } from './validate-input.ts';

/** Options of `createCallSettler`. */
export interface ToolRuntimeOptions {
  tools: ToolSet;
  /** Runtime-wide permission policy, consulted after each tool's own permission. */
  policy?: PermissionPolicy;
  /** Monotonic clock in milliseconds for `durationMs` (default `performance.now`). */
  now?: () => number;
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
export function createCallSettler({
  tools,
  policy,
  now = () => performance.now(),
}: ToolRuntimeOptions): CallSettler {
  for (const [name, tool] of Object.entries(tools)) assertTool(name, tool);
  const limiter = createKeyedLimiter();
  const loopGate = createLoopGate();
  // Guards against two concurrent `run`s of one call in this process; the deterministic
  // `tool.started` id guards across processes.
  const running = new Set<string>();

  function lookup(name: string): Tool | undefined {
    return Object.hasOwn(tools, name) ? tools[name] : undefined;
  }

  function unknownToolText(name: string): string {
    return settlementText.unknownTool(name, Object.keys(tools));
  }

  /** The call's one `tool.settled`, its text bounded to what the model may see. */
  function settledDraft(
    call: ToolCallRecord,
    context: SettleContext,
    outcome: ToolOutcome,
    body: { text: string; truncated?: boolean; output?: JsonValue; durationMs?: number },
  ): ProposedFact {
    const bounded =
      body.truncated === undefined
        ? truncateText(body.text.trim(), context.limits.toolOutputChars)
        : { text: body.text, truncated: body.truncated };
    const draft: ProposedFact = {
      type: 'tool.settled',
      id: toolFactId({ stepId: context.stepId, callId: call.callId, kind: 'settled' }),
      callId: call.callId,
      name: call.name,
      outcome,
      text: bounded.text,
      truncated: bounded.truncated,
    };
    if (body.output !== undefined) draft.output = body.output;
    if (body.durationMs !== undefined) draft.durationMs = body.durationMs;
    return draft;
  }

  function settle(
    call: ToolCallRecord,
    context: SettleContext,
    outcome: ToolOutcome,
    body: Parameters<typeof settledDraft>[3],
  ): Promise<boolean> {
    return context.commit(settledDraft(call, context, outcome, body));
  }

  /**
   * I5: a call goes further only with a guard proof, a known tool and a valid input. Returns the
   * tool and the schema-derived value to use from now on, or how the call settles instead.
   */
  async function admit(
    call: ToolCallRecord,
  ): Promise<
    | { tool: Tool; validation: Extract<InputValidation, { status: 'valid' }> }
    | { outcome: ToolOutcome; text: string }
  > {
    if (call.proof === null) return { outcome: 'withheld', text: settlementText.withheld(call) };
    const tool = lookup(call.name);
    if (tool === undefined) return { outcome: 'invalid', text: unknownToolText(call.name) };
    const validation = await validateToolInput({ name: call.name, tool, raw: call.input });
    if (validation.status !== 'valid') return { outcome: validation.status, text: validation.text };
    return { tool, validation };
  }

  async function decide(call: ToolCallRecord, context: SettleContext): Promise<ProposedFact> {
    const admitted = await admit(call);
    if ('outcome' in admitted) {
      return settledDraft(call, context, admitted.outcome, { text: admitted.text });
    }
    const { tool, validation } = admitted;
    const { inputHash } = validation;
    const { facts, runId } = context;
    if (loopGate.isRepeatedFailure({ facts, runId, name: call.name, inputHash })) {
      return settledDraft(call, context, 'denied', { text: settlementText.loopGate(call.name) });
    }
    let permission: PermissionResult;
    try {
      permission = await evaluatePermission({
        name: call.name,
        tool,
        input: copyOf(validation.value),
        jsonInput: copyOf(validation.json),
        sessionId: context.sessionId,
        policy,
      });
    } catch (error) {
      return settledDraft(call, context, 'error', {
        text: settlementText.permissionFailed(
          redactedMessage(error, secretsOf(tool, validation.value)),
        ),
      });
    }
    const reason = permission.reason === undefined ? {} : { reason: permission.reason };
    switch (permission.verdict) {
      case 'allow':
      case 'deny':
        return {
          type: 'tool.permission.decided',
          id: toolFactId({ stepId: context.stepId, callId: call.callId, kind: 'decided' }),
          callId: call.callId,
          decision: permission.verdict,
          inputHash,
          by: 'policy',
          ...reason,
        };
      case 'ask':
        return {
          type: 'tool.permission.requested',
          id: toolFactId({ stepId: context.stepId, callId: call.callId, kind: 'requested' }),
          callId: call.callId,
          name: call.name,
          input: validation.json,
          inputHash,
          ...reason,
        };
      default:
        return assertNever(permission.verdict, 'permission verdict');
    }
  }

  async function runAllowed(
    call: ToolCallRecord,
    decision: DecidedPermission,
    context: SettleContext,
  ): Promise<void> {
    // I5: execute only the schema-derived value of the proved input the decision was bound to.
    const admitted = await admit(call);
    if ('outcome' in admitted) {
      await settle(call, context, admitted.outcome, { text: admitted.text });
      return;
    }
    const { tool, validation } = admitted;
    if (validation.inputHash !== decision.inputHash) {
      await settle(call, context, 'error', {
        text: settlementText.inputChanged(decision.inputHash, validation.inputHash),
      });
      return;
    }
    const notStarted = settlementText.notStarted();
    if (context.signal.aborted) {
      await settle(call, context, 'cancelled', { text: notStarted });
      return;
    }
    let release: () => void;
    try {
      release = await limiter.acquire({
        key: `${context.sessionId}\u0000${context.runId}`,
        limit: context.limits.toolConcurrency,
        signal: context.signal,
      });
    } catch {
      await settle(call, context, 'cancelled', { text: notStarted });
      return;
    }
    try {
      // I2: tool.started is durable before execute; a `false` means another settlement took
      // this call or the run stopped, so nothing executes (I5: at most once).
      const started = await context.commit({
        type: 'tool.started',
        id: toolFactId({ stepId: context.stepId, callId: call.callId, kind: 'started' }),
        callId: call.callId,
        name: call.name,
        input: validation.json,
        inputHash: validation.inputHash,
      });
      if (!started) return;
      const startedAt = now();
      const result = await executeTool({
        tool,
        input: copyOf(validation.value),
        callId: call.callId,
        sessionId: context.sessionId,
        signal: context.signal,
        stopGraceMs: context.limits.stopGraceMs,
      });
      const durationMs = Math.max(0, Math.round(now() - startedAt));
      // Read after execute: a tool may learn a secret while running (a fetched token).
      const secrets = secretsOf(tool, validation.value);
      const failure = (error: unknown) => redactedMessage(error, secrets);
      switch (result.kind) {
        case 'returned':
          if (!secrets.readable) {
            // Fail closed: a result that cannot be redacted is never recorded (no `output`).
            await settle(call, context, 'error', {
              text: settlementText.outputWithheld(secrets.problem),
              durationMs,
            });
            return;
          }
          await settle(call, context, 'success', {
            ...formatToolOutput({
              value: result.value,
              maxChars: context.limits.toolOutputChars,
              secrets: secrets.secrets,
            }),
            durationMs,
          });
          return;
        case 'threw':
          if (result.afterStop) {
            await settle(call, context, 'cancelled', {
              text: settlementText.failedAfterStop(failure(result.error)),
              durationMs,
            });
          } else {
            await settle(call, context, 'error', {
              text: settlementText.failed(failure(result.error)),
              durationMs,
            });
          }
          return;
        case 'timeout':
          await settle(call, context, 'error', {
            text: settlementText.timedOut(tool.timeoutMs),
            durationMs,
          });
          return;
        case 'abandoned':
          await settle(call, context, 'unknown', {
            text: settlementText.abandonedAfterStop(context.limits.stopGraceMs),
            durationMs,
          });
          return;
        default:
          assertNever(result, 'execution result');
      }
    } finally {
      release();
    }
  }

  return {
    decide,

    async run(call, decision, context) {
      switch (decision.decision) {
        case 'allow': {
          const key = `${context.sessionId}\u0000${context.stepId}\u0000${call.callId}`;
          if (running.has(key)) return;
          running.add(key);
          try {
            await runAllowed(call, decision, context);
          } finally {
            running.delete(key);
          }
          return;
        }
        case 'deny':
        case 'report-unknown':
        case 'abort': {
          const startedId = toolFactId({
            stepId: context.stepId,
            callId: call.callId,
            kind: 'started',
          });
          const started = context.facts.some((fact) => fact.id === startedId);
          const outcome = {
            deny: 'denied',
            'report-unknown': 'unknown',
            abort: 'cancelled',
          } as const;
          await settle(call, context, outcome[decision.decision], {
            text: settlementText.decided(decision, started),
          });
          return;
        }
        default:
          assertNever(decision.decision, 'permission decision');
      }
    },

    async abandon(call, outcome, reason, context) {
      await settle(call, context, outcome, { text: settlementText.abandoned(outcome, reason) });
    },
  };
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
