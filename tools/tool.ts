import type {
  CommitFact,
  Fact,
  PermissionDecision,
  ProposedFact,
  RunLimits,
  ToolCallRecord,
} from '../events/facts.ts';
import type { JsonValue } from '../events/json.ts';

/**
 * The tool contract: what `defineTool` returns and what the tool runtime settles.
 * Tools are executed only by the call settler (tools/call-settler.ts), never by a model adapter.
 */

/** The Standard Schema v1 interface (https://standardschema.dev); zod v4 schemas implement it. */
export interface StandardSchemaV1<TInput = unknown, TOutput = TInput> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (
      value: unknown,
    ) => StandardSchemaV1.Result<TOutput> | Promise<StandardSchemaV1.Result<TOutput>>;
    readonly types?: { readonly input: TInput; readonly output: TOutput } | undefined;
  };
}

export declare namespace StandardSchemaV1 {
  type Result<TOutput> =
    | { readonly value: TOutput; readonly issues?: undefined }
    | { readonly issues: ReadonlyArray<Issue> };
  interface Issue {
    readonly message: string;
    readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
  }
  type InferOutput<TSchema extends StandardSchemaV1> = NonNullable<
    TSchema['~standard']['types']
  >['output'];
}

/** What a tool's permission says about one validated input. */
export type PermissionVerdict = 'allow' | 'ask' | 'deny';

/** A permission verdict with an optional reason shown to the person (ask) or model (deny). */
export interface PermissionResult {
  verdict: PermissionVerdict;
  reason?: string;
}

/** A tool's own permission: a verdict, or a function of the validated input. */
export type ToolPermission<TInput> =
  | PermissionVerdict
  | ((
      input: TInput,
    ) => PermissionVerdict | PermissionResult | Promise<PermissionVerdict | PermissionResult>);

/**
 * What a permission policy is asked about: one call of one of the runtime's tools. A union over
 * the tools, so checking `name` types `input` as that tool's validated input.
 */
export type PolicyRequest<TTools extends ToolSet = ToolSet> = {
  [TName in keyof TTools & string]: {
    name: TName;
    /** A JSON copy of the validated input (schema output): what `tool.started` records. */
    input: PolicyInput<TTools[TName]>;
    toolVerdict: PermissionResult;
    sessionId: string;
  };
}[keyof TTools & string];

/** A tool's validated input type, or `JsonValue` where it is not known (`Tool<any>`). */
type PolicyInput<TTool> =
  TTool extends Tool<infer TInput> ? (0 extends 1 & TInput ? JsonValue : TInput) : JsonValue;

/**
 * A runtime-wide policy, consulted after the tool's own permission (it may tighten or loosen
 * it; `undefined` keeps the tool's verdict). Given to `createRuntime`, its request is typed by
 * the runtime's tools.
 *
 * @example
 * const policy: PermissionPolicy<{ runCommand: typeof runCommand }> = ({ name, input }) =>
 *   name === 'runCommand' && input.command === 'rm' ? { verdict: 'deny', reason: 'no rm' } : undefined;
 */
export type PermissionPolicy<TTools extends ToolSet = ToolSet> = (
  request: PolicyRequest<TTools>,
) =>
  | PermissionVerdict
  | PermissionResult
  | undefined
  | Promise<PermissionVerdict | PermissionResult | undefined>;

/** What `execute` receives besides its input. */
export interface ToolExecuteContext {
  /** Aborted on stop (I10) and on the tool's timeout. */
  signal: AbortSignal;
  callId: string;
  sessionId: string;
  /**
   * The call's idempotency key (`idempotencyKey`: `turnlog-` and 32 hex digits): the same across
   * retries, recoveries and takeovers, different for every call of every session. Pass it to an
   * external API that deduplicates by key (a payment's `Idempotency-Key` header), so a call run
   * again takes effect once.
   */
  idempotencyKey: string;
}

/**
 * What a tool's `reconcile` answers for a call that started and never settled (a crash, a
 * takeover): `done` (it took effect; `output` is what `execute` would have returned), `not-done`
 * (it did not take effect: it runs again, once, with the same idempotency key), or `unknown`
 * (it cannot tell; `reason` is shown to the person asked).
 */
export type ReconcileResult<TOutput = unknown> =
  | { status: 'done'; output: TOutput }
  | { status: 'not-done' }
  | { status: 'unknown'; reason: string };

/** What `reconcile` receives besides the call's input: the same as `execute`. */
export type ToolReconcileContext = ToolExecuteContext;

/** A tool: a schema for the model, a permission, and `execute` for the tool runtime. */
// biome-ignore lint/suspicious/noExplicitAny: a ToolSet holds tools of different inputs; `execute` is contravariant in it.
export interface Tool<TInput = any, TOutput = unknown> {
  description: string;
  inputSchema: StandardSchemaV1<unknown, TInput>;
  permission: ToolPermission<TInput>;
  /** Milliseconds before `execute` is abandoned and the call settles `error`. */
  timeoutMs: number;
  /**
   * Strings to redact from everything of the call that reaches the log and the model: output,
   * thrown messages, permission and schema errors (API keys the tool uses, say). Called with the
   * validated input, or with the raw input when validation failed. Fails closed: when it throws
   * or returns anything but an array of strings, that text is withheld, and a returned value
   * settles as `error` without being recorded.
   */
  secrets: (input: TInput) => string[];
  execute: (input: TInput, context: ToolExecuteContext) => TOutput | Promise<TOutput>;
  /**
   * Asked after a restart about a call that started and never settled, before any person:
   * did it take effect? (Look the call up by `context.idempotencyKey`.) Absent: the tool cannot
   * tell. Runs under `reconcileTimeoutMs` and the run's `toolConcurrency`.
   */
  reconcile?: (
    input: TInput,
    context: ToolReconcileContext,
  ) => ReconcileResult<TOutput> | Promise<ReconcileResult<TOutput>>;
  /** Milliseconds `reconcile` may take before its answer counts as `unknown` (default 10 000). */
  reconcileTimeoutMs?: number;
  /**
   * True when running the tool again has the same effect as running it once: a call that
   * started and never settled then runs again after a restart, without asking anyone.
   */
  idempotent?: boolean;
}

export type ToolSet = Record<string, Tool>;

/** A decision already in the log for one call. */
export interface DecidedPermission {
  decision: PermissionDecision;
  inputHash: string;
  by: 'user' | 'policy';
  reason?: string;
}

/** Everything a settlement needs from the run it belongs to. */
export interface SettleContext {
  sessionId: string;
  runId: string;
  stepId: string;
  limits: RunLimits;
  /** The run's abort signal (stop). */
  signal: AbortSignal;
  /** Commit, then transition: resolves `false` when the fact was not taken. */
  commit: CommitFact;
  /** Commits facts in one append (a call's `tool.reconciled` and its `tool.settled`). */
  commitAll: (drafts: readonly ProposedFact[]) => Promise<boolean[]>;
  /** The session's facts so far (for the loop gate), read through the run driver, which owns them. */
  facts: readonly Fact[];
}

/** The tool runtime: the one place a tool executes. */
export interface CallSettler {
  /**
   * Validation, loop gate and permission for one call of a completed step. Returns, without
   * committing it, the one fact that decides the call: `tool.settled` (withheld, invalid,
   * unknown tool, refused by the loop gate, a failing permission), `tool.permission.decided`
   * (`by: 'policy'`, allow or deny) or `tool.permission.requested`. The step's actor commits
   * every call's decision in the same append as `step.completed`; the loop gate reads
   * `context.facts`, the log before the step.
   */
  decide(call: ToolCallRecord, context: SettleContext): Promise<ProposedFact>;
  /**
   * Decides every call of a completed step (`decide`, permission functions of different calls
   * at once) and returns the decisions in call order, followed by the `tool.started` of each
   * call that starts at once: when no call asks a person (the run goes on to
   * `settlingTools.running`), the first `limits.toolConcurrency` calls allowed by policy. The
   * step's actor commits them all in the write of `step.completed`; `run` then finds such a
   * call's start recorded and executes it without committing another.
   */
  decideStep(calls: readonly ToolCallRecord[], context: SettleContext): Promise<ProposedFact[]>;
  /**
   * Settles a call whose decision is in the log. `allow`: validate again (the hash must match
   * the decision), commit `tool.started` (unless the step's response recorded it, see
   * `decideStep`), execute once, commit `tool.settled`; when `tool.started` is not taken
   * (already in the log from before a restart, or the run stopped) nothing executes.
   * `deny` → `denied`; `report-unknown` → `unknown`; `abort` → `cancelled`.
   */
  run(
    call: ToolCallRecord,
    decision: DecidedPermission,
    context: SettleContext,
    /** 1, or the number of this start when the call runs again after a restart (its fact ids). */
    execution?: number,
  ): Promise<void>;
  /**
   * How a call of the named tool that started and never settled is resolved after a restart
   * without a person: `reconcile` (its tool is asked), `idempotent` (it runs again), or
   * `undefined` (a person decides; also for a name the set does not hold).
   */
  checkOf(name: string): 'reconcile' | 'idempotent' | undefined;
  /**
   * Checks a call that may have run (`tool.indeterminate` with `check`) and commits the answer,
   * `tool.reconciled` (id `${stepId}:${callId}:reconciled-${recovery}`): `done` with the call's
   * `tool.settled` success in the same append; `not-done`; `idempotent`; or `unknown` when
   * `reconcile` said so, threw, returned something else or did not answer in time.
   */
  reconcile(call: ToolCallRecord, recovery: number, context: SettleContext): Promise<void>;
  /** Settles a call that will not run (`cancelled`), or whose result will never come (`unknown`). */
  abandon(
    call: ToolCallRecord,
    outcome: 'cancelled' | 'unknown',
    reason: string,
    context: SettleContext,
  ): Promise<void>;
}
