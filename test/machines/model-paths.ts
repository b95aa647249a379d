import { getAdjacencyMap } from '@xstate/graph';
import type { Fact, ProposedFact, RunLimits, ToolCallRecord } from '../../events/facts.ts';
import { statePath } from '../../machines/pure/state-path.ts';
import type { TurnContext } from '../../machines/pure/turn-context.ts';
import { turnMachine } from '../../machines/pure/turn-machine.ts';
import { storedFact } from '../helpers/fact-builder.ts';

/**
 * The abstract model the model-based test explores: for each machine state, the facts the live
 * runtime can produce there (the lockstep director in model-director.ts can make each happen),
 * labelled with a variant. Paths through this graph are turned into live scenarios.
 *
 * Tools: `ok` (succeeds), `fails` (throws), `ask` (permission ask), `rec` (has `reconcile`: after
 * a restart the director answers its check `done`, `not-done` or `unknown`) and `idem`
 * (idempotent: it runs again after a restart); a call's id names its kind (`c_ok`, `c_fails`,
 * `c_ask`, `c_rec`, `c_idem`, `c_withheld` — an `ok` call the guard withholds).
 */

export type Variant =
  | 'text'
  | 'length'
  | 'call-ok'
  | 'call-fails'
  | 'call-ask'
  | 'call-ok+ask'
  | 'call-withheld'
  | 'call-rec'
  | 'call-idem'
  | 'call-ok+rec'
  | 'rate-limit'
  | 'after-output'
  | 'overflow'
  | 'auth'
  | 'summary'
  | 'summary-fails'
  | 'allow'
  | 'deny'
  | 'abort'
  | 'steer'
  | 'stop'
  | 'recover'
  | 'done'
  | 'not-done'
  | 'unknown'
  /** A fact committed in the same append as the one before it (a check's `done` and its settlement). */
  | 'with-previous'
  | 'auto';

/** A fact of a model path, with the variant the director must produce. */
export type ModelFact = Fact & { variant: Variant };

type Snapshot = ReturnType<typeof turnMachine.transition>;

const calls: Record<string, ToolCallRecord> = {
  c_ok: { callId: 'c_ok', name: 'ok', input: {}, proof: 'raw-bytes' },
  c_fails: { callId: 'c_fails', name: 'fails', input: {}, proof: 'raw-bytes' },
  c_ask: { callId: 'c_ask', name: 'ask', input: {}, proof: 'raw-bytes' },
  c_withheld: { callId: 'c_withheld', name: 'ok', input: {}, proof: null, withheld: 'cut off' },
  c_rec: { callId: 'c_rec', name: 'rec', input: {}, proof: 'raw-bytes' },
  c_idem: { callId: 'c_idem', name: 'idem', input: {}, proof: 'raw-bytes' },
};

/** How a restart resolves a started call of each tool without a person (`tool.indeterminate`'s `check`). */
const checks: Record<string, 'reconcile' | 'idempotent'> = { rec: 'reconcile', idem: 'idempotent' };

const stepCalls: Partial<Record<Variant, string[]>> = {
  'call-ok': ['c_ok'],
  'call-fails': ['c_fails'],
  'call-ask': ['c_ask'],
  'call-ok+ask': ['c_ok', 'c_ask'],
  'call-withheld': ['c_withheld'],
  'call-rec': ['c_rec'],
  'call-idem': ['c_idem'],
  'call-ok+rec': ['c_ok', 'c_rec'],
};

export const modelLimits = (window: boolean): RunLimits => ({
  maxSteps: 2,
  maxAttempts: 2,
  maxOutputTokens: undefined,
  toolOutputChars: 1_000,
  // A window this small is always exceeded: every projection that may compact, does.
  contextWindowTokens: window ? 1 : undefined,
  toolConcurrency: 4,
  stopGraceMs: 1_000,
});

let seq = 0;
function fact(draft: ProposedFact, variant: Variant): ModelFact {
  seq += 1;
  const envelope = {
    seq,
    id: draft.id ?? `m${seq}`,
    at: '',
    sessionId: 's',
    turnId: 't',
    runId: 'r',
  };
  return { ...storedFact(draft, envelope), variant } as ModelFact;
}

const usage = {
  inputTokens: 1,
  outputTokens: 1,
  reasoningTokens: undefined,
  cachedInputTokens: undefined,
};

function completed(context: TurnContext, variant: Variant): ModelFact {
  const toolCalls = (stepCalls[variant] ?? []).map((id) => calls[id] as ToolCallRecord);
  return fact(
    {
      type: 'step.completed',
      stepId: context.stepId ?? '',
      finishReason: {
        unified:
          variant === 'length' || variant === 'call-withheld'
            ? 'length'
            : toolCalls.length
              ? 'tool-calls'
              : 'stop',
        raw: undefined,
      },
      usage,
      content: [{ type: 'text', text: 'x' }],
      toolCalls,
      response: { id: undefined, modelId: undefined },
    },
    variant,
  );
}

function failed(
  context: TurnContext,
  variant: 'rate-limit' | 'after-output' | 'overflow' | 'auth',
): ModelFact {
  const kind = {
    'rate-limit': 'rate_limit',
    'after-output': 'stream_interrupted',
    overflow: 'context_overflow',
    auth: 'auth',
  } as const;
  const retryable = variant === 'rate-limit' || variant === 'after-output';
  return fact(
    {
      type: 'step.failed',
      stepId: context.stepId ?? '',
      error: { kind: kind[variant], retryable, message: variant },
      observedOutput: variant === 'after-output',
    },
    variant,
  );
}

const settled = (
  callId: string,
  outcome: 'success' | 'error' | 'withheld' | 'denied' | 'cancelled' | 'unknown',
  variant: Variant = 'auto',
) =>
  fact(
    {
      type: 'tool.settled',
      callId,
      name: calls[callId]?.name ?? '',
      outcome,
      text: outcome,
      truncated: false,
    },
    variant,
  );

type ModelCall = { callId: string; name: string };

/** A recovery's mark of a call that may have run, with its tool's check when it has one. */
const mark = (call: ModelCall, variant: Variant) => {
  const check = checks[call.name];
  return fact(
    { type: 'tool.indeterminate', callId: call.callId, name: call.name, ...(check && { check }) },
    variant,
  );
};

/** A person's answer for an indeterminate call. */
const personDecides = (call: ModelCall, decision: 'allow' | 'deny' | 'abort' | 'report-unknown') =>
  fact(
    { type: 'tool.permission.decided', callId: call.callId, decision, inputHash: 'h', by: 'user' },
    decision === 'report-unknown' ? 'auto' : decision,
  );

/**
 * Snapshots a `tool.indeterminate` led to: a recovery is committing its marks, so only its next
 * mark or its `run.recovered` can follow (set by `serializeModelState`, which the traversal
 * calls with the event that led to each snapshot before it asks for that snapshot's facts).
 */
const marking = new WeakMap<object, boolean>();

/** The rest of a recovery under way: the next started call's mark, then `run.recovered`. */
function recoveryRest(snapshot: Snapshot, recover: ModelFact): ModelFact[] {
  const next = snapshot.context.calls.find((call) => call.status === 'started');
  return next === undefined ? [recover] : [mark(next, 'auto')];
}

/** After a restart, in `reconciling`: each checked call's answer, a person's answers, a second restart. */
function reconcilingFacts(context: TurnContext): ModelFact[] {
  // A check answered `done` commits the call's settlement in the same append.
  const committing = context.calls.find((call) => call.status === 'started');
  if (committing) return [settled(committing.callId, 'success', 'with-previous')];
  const checking = context.calls.filter((call) => call.status === 'checking');
  const answers = checking.flatMap((call) =>
    (call.name === 'idem'
      ? (['idempotent'] as const)
      : (['done', 'not-done', 'unknown'] as const)
    ).map((answer) =>
      fact(
        {
          type: 'tool.reconciled',
          callId: call.callId,
          name: call.name,
          answer,
          ...(answer === 'unknown' && { reason: 'cannot tell' }),
        },
        answer === 'idempotent' ? 'auto' : answer,
      ),
    ),
  );
  const decisions = context.calls
    .filter((call) => call.status === 'indeterminate')
    .map((call) => personDecides(call, 'report-unknown'));
  // A second restart while a check is under way marks the checked calls again.
  const again =
    context.recoveries === 1 ? checking.slice(0, 1).map((call) => mark(call, 'recover')) : [];
  return [...answers, ...decisions, ...again];
}

/** The facts the runtime can produce from this snapshot (see the file header). */
export function candidateFacts(snapshot: Snapshot): ModelFact[] {
  const { context } = snapshot;
  const state = statePath(snapshot.value);
  const steered = context.lastSteeringSeq > context.projectedThroughSeq;
  const once = context.recoveries === 0;
  const stop = fact({ type: 'run.stop.requested', reason: 'stop' }, 'stop');
  const steer = fact({ type: 'steering.received', messageId: `m${seq}`, text: 'steer' }, 'steer');
  const recover = fact({ type: 'run.recovered', interrupted: state, indeterminate: [] }, 'recover');
  const interventions = (allowSteer: boolean) => [
    stop,
    ...(allowSteer && !steered ? [steer] : []),
    ...(once ? [recover] : []),
  ];
  if (marking.get(snapshot) === true) return recoveryRest(snapshot, recover);
  switch (state) {
    case 'projecting': {
      const compact =
        context.limits.contextWindowTokens !== undefined && !context.compactedSinceStep;
      const next = compact
        ? fact(
            { type: 'compaction.started', reason: 'budget', estimatedTokens: 2, budgetTokens: 1 },
            'auto',
          )
        : fact(
            {
              type: 'step.started',
              stepId: context.retry?.stepId ?? `step${seq}`,
              attempt: context.retry?.attempt ?? 1,
              request: {
                provider: 'scripted',
                modelId: 'm',
                messageCount: 1,
                tools: [],
                activeTools: undefined,
                inputHash: 'h',
              },
              projectedThroughSeq: seq,
            },
            'auto',
          );
      // The first projection is left at once after run.started: nothing can intervene there.
      return [next, ...(context.stepId === undefined ? [] : interventions(false))];
    }
    case 'compacting':
      return [
        fact(
          {
            type: 'compaction.completed',
            summary: 's',
            throughSeq: 1,
            tokensBefore: 2,
            tokensAfter: 1,
          },
          'summary',
        ),
        fact(
          { type: 'compaction.failed', error: { kind: 'auth', retryable: false, message: 'no' } },
          'summary-fails',
        ),
        ...interventions(false),
      ];
    case 'requesting.streaming':
      return [
        ...(
          [
            'text',
            'length',
            'call-ok',
            'call-fails',
            'call-ask',
            'call-ok+ask',
            'call-withheld',
            'call-rec',
            'call-idem',
            'call-ok+rec',
          ] as const
        ).map((variant) => completed(context, variant)),
        ...(['rate-limit', 'after-output', 'overflow', 'auth'] as const).map((variant) =>
          failed(context, variant),
        ),
        ...interventions(true),
      ];
    case 'requesting.backingOff':
      return [
        fact(
          {
            type: 'retry.due',
            stepId: context.retry?.stepId ?? '',
            attempt: context.retry?.attempt ?? 0,
          },
          'auto',
        ),
        ...interventions(false),
      ];
    case 'settlingTools.deciding': {
      const proposed = context.calls.filter((call) => call.status === 'proposed');
      // Live, every decision shares the write of step.completed, in call order: nothing can
      // come between them but a crash that cuts the write. Deciders (started only by a
      // recovery) decide each call on its own, in any order, and can be stopped.
      const batch = !Object.keys(snapshot.children).some((id) => id.startsWith('decide:'));
      // A withheld call settles at once, before any gated permission decision.
      const withheld = proposed.find((call) => call.callId === 'c_withheld');
      const decisions = withheld
        ? [settled(withheld.callId, 'withheld')]
        : (batch ? proposed.slice(0, 1) : proposed).map((call) =>
            call.callId === 'c_ask'
              ? fact(
                  {
                    type: 'tool.permission.requested',
                    callId: call.callId,
                    name: call.name,
                    input: {},
                    inputHash: 'h',
                  },
                  'auto',
                )
              : fact(
                  {
                    type: 'tool.permission.decided',
                    callId: call.callId,
                    decision: 'allow',
                    inputHash: 'h',
                    by: 'policy',
                  },
                  'auto',
                ),
          );
      if (batch) return [...decisions, ...(once ? [recover] : [])];
      return [...decisions, ...interventions(false)];
    }
    case 'awaitingPermission': {
      const asked = context.calls.filter(
        (call) => call.status === 'asked' || call.status === 'indeterminate',
      );
      const decisions = asked.flatMap((call) =>
        (call.status === 'asked'
          ? (['allow', 'deny', 'abort'] as const)
          : (['report-unknown', 'abort'] as const)
        ).map((decision) => personDecides(call, decision)),
      );
      // A second restart while a person is asked about a call its tool could not check asks the
      // tool again first.
      const again =
        context.recoveries === 1
          ? asked
              .filter((call) => call.status === 'indeterminate' && checks[call.name] !== undefined)
              .slice(0, 1)
              .map((call) => mark(call, 'recover'))
          : [];
      return [...decisions, ...interventions(true), ...again];
    }
    case 'settlingTools.reconciling':
      return reconcilingFacts(context);
    case 'settlingTools.running': {
      // Runners commit their first fact in call order; executions then end as the director releases them.
      const waiting = context.calls.find((call) => call.status === 'decided');
      if (waiting) {
        const decision = waiting.decision?.decision;
        return [
          decision === 'allow'
            ? fact(
                {
                  type: 'tool.started',
                  callId: waiting.callId,
                  name: waiting.name,
                  input: {},
                  inputHash: 'h',
                },
                'auto',
              )
            : settled(
                waiting.callId,
                decision === 'deny'
                  ? 'denied'
                  : decision === 'report-unknown'
                    ? 'unknown'
                    : 'cancelled',
              ),
        ];
      }
      const running = context.calls.filter((call) => call.status === 'started');
      return [
        ...running.map((call) =>
          settled(call.callId, call.callId === 'c_fails' ? 'error' : 'success'),
        ),
        ...running.slice(0, once ? 1 : 0).map((call) => mark(call, 'recover')),
        ...interventions(true).filter((candidate) => candidate.type !== 'run.recovered'),
      ];
    }
    case 'settlingTools.stopping': {
      const open = context.calls.find((call) => call.status !== 'settled');
      if (!open) return [];
      return [settled(open.callId, open.status === 'indeterminate' ? 'unknown' : 'cancelled')];
    }
    default:
      return [];
  }
}

/** The abstract state a path step reaches: the state value and the context that steers the loop. */
export function serializeModelState(snapshot: Snapshot, event?: ModelFact): string {
  if (event !== undefined) marking.set(snapshot, event.type === 'tool.indeterminate');
  const { context } = snapshot;
  return JSON.stringify([
    marking.get(snapshot) === true,
    statePath(snapshot.value),
    context.attempt,
    context.completedSteps,
    context.overflowCompactions,
    context.compactedSinceStep,
    context.lastSteeringSeq > context.projectedThroughSeq,
    context.recoveries,
    context.calls.map((call) => `${call.callId}:${call.status}:${call.decision?.decision ?? ''}`),
    context.outcome?.reason ?? '',
  ]);
}

export interface ModelPath {
  window: boolean;
  facts: ModelFact[];
  /** The machine state recorded after each fact. */
  states: string[];
  /** `source|event variant|target` of the transition this path was chosen to cover. */
  covers: string;
}

/**
 * One shortest path per machine state and per transition (source state, event and variant,
 * target state), from the traversals with and without a (tiny) context window.
 */
export function modelPaths(): ModelPath[] {
  const chosen = new Map<string, ModelPath>();
  for (const window of [false, true]) {
    seq = 0;
    const input = { sessionId: 's', turnId: 't', runId: 'r', limits: modelLimits(window) };
    type Adjacency = Record<
      string,
      { state: Snapshot; transitions: Record<string, { event: ModelFact; state: Snapshot }> }
    >;
    const adjacency = getAdjacencyMap(turnMachine, {
      input,
      events: candidateFacts as never,
      serializeState: serializeModelState as never,
      serializeEvent: (event) =>
        `${(event as ModelFact).type}:${(event as ModelFact).variant}:${(event as { callId?: string }).callId ?? ''}:${(event as { decision?: string }).decision ?? ''}`,
      limit: 50_000,
    }) as unknown as Adjacency;
    // Breadth-first from the initial state: the first path found to a state is a shortest one.
    const keys = Object.keys(adjacency);
    const pathTo = new Map<string, { facts: ModelFact[]; states: string[] }>([
      [keys[0] as string, { facts: [], states: [] }],
    ]);
    const queue = [keys[0] as string];
    while (queue.length > 0) {
      const key = queue.shift() as string;
      const path = pathTo.get(key) as { facts: ModelFact[]; states: string[] };
      const entry = adjacency[key];
      if (entry === undefined) continue;
      const source = statePath(entry.state.value);
      for (const { event, state } of Object.values(entry.transitions)) {
        // recover() holds the session until its run.recovered is durable, so nothing can be
        // queued in the projection that follows it: the runtime leaves it at once.
        const afterRecovery = path.facts.at(-1)?.type === 'run.recovered';
        if (
          source === 'projecting' &&
          afterRecovery &&
          (event.variant === 'stop' || event.variant === 'recover')
        )
          continue;
        const target = statePath(state.value);
        const next = { facts: [...path.facts, event], states: [...path.states, target] };
        const covers = `${source}|${event.type}:${event.variant}|${target}`;
        if (!chosen.has(covers)) chosen.set(covers, { window, ...next, covers });
        const nextKey = serializeModelState(state);
        if (!pathTo.has(nextKey)) {
          pathTo.set(nextKey, next);
          queue.push(nextKey);
        }
      }
    }
  }
  return [...chosen.values()];
}
