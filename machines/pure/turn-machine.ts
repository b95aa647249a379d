import {
  type Actor,
  and,
  assertEvent,
  assign,
  type EventObject,
  enqueueActions,
  fromCallback,
  not,
  type SnapshotFrom,
  setup,
} from 'xstate';
import {
  type PrepareStepInput,
  type ProviderStepInput,
  type RetryTimerInput,
  type SettleToolInput,
  type SummarizeInput,
  settleChild,
  settleChildId,
  settlePhases,
  type TurnMachineEvent,
} from './actor-inputs.ts';
import {
  callState,
  initialContext,
  outcomeOf,
  outcomeOfFailure,
  outcomeOfFinalStep,
  spentAfterCompletion,
  type TurnContext,
  type TurnInput,
  type TurnOutcome,
  type TurnTag,
  updateCall,
} from './turn-context.ts';
import { turnGuards } from './turn-guards.ts';

/**
 * The turn machine: the runtime-owned agent loop as one XState v5 machine. Facts are its
 * events; it never performs an effect itself. Effects happen in the named actors and the
 * `abortRun` action, which the runtime provides (machines/effects/run-actors.ts); actors report
 * back only by committing facts ("commit, then transition", I3). Its tags (`TurnTag`) say when
 * a run is parked, needs a person or is stopping. The actors below are inert placeholders, so
 * the machine can be driven fact by fact in tests and folded during rehydration.
 *
 * See architecture/turn-machine.md for the diagram and where each invariant is enforced.
 */

/**
 * The turn machine's version, recorded in each `run.started` (`machineVersion`): a whole number,
 * increased with every change to the machine's states or transitions.
 */
export const turnMachineVersion = '5';

/** A placeholder for an actor the runtime provides: typed by its input, it does nothing. */
const inert = <TInput>() => fromCallback<EventObject, TInput>(() => {});

export const turnMachine = setup({
  types: {} as {
    context: TurnContext;
    events: TurnMachineEvent;
    input: TurnInput;
    output: TurnOutcome;
    tags: TurnTag;
  },
  actors: {
    prepareStep: inert<PrepareStepInput>(),
    providerStep: inert<ProviderStepInput>(),
    retryTimer: inert<RetryTimerInput>(),
    summarize: inert<SummarizeInput>(),
    settleTool: inert<SettleToolInput>(),
  },
  guards: turnGuards,
  actions: {
    // I10, provided by the runtime: abort the run's request and tools' signal. It runs once the
    // stop is durable (the live actor takes a fact only then); a fold runs no action.
    abortRun: () => {},
    startStep: assign(({ context, event: fact }) => {
      assertEvent(fact, 'step.started');
      // Counted now: a step cut before its usage arrives (a crash, a cut stream) still costs it.
      const prompt = fact.request.promptTokens ?? 0;
      return {
        tokensSpent: { ...context.tokensSpent, input: context.tokensSpent.input + prompt },
        inFlightPromptTokens: prompt,
        stepId: fact.stepId,
        attempt: fact.attempt,
        retry: undefined,
        retryAfterMs: undefined,
        calls: [],
        projectedThroughSeq: fact.projectedThroughSeq ?? fact.seq,
      };
    }),
    completeStep: assign(({ context, event: fact }) => {
      assertEvent(fact, 'step.completed');
      return {
        completedSteps: context.completedSteps + 1,
        compactedSinceStep: false,
        tokensSpent: spentAfterCompletion(context, fact.usage),
        inFlightPromptTokens: 0,
        calls: fact.toolCalls.map((call) => ({
          callId: call.callId,
          name: call.name,
          status: 'proposed' as const,
        })),
      };
    }),
    endWithFinalStep: assign(({ event }) => {
      assertEvent(event, 'step.completed');
      return { outcome: outcomeOfFinalStep(event) };
    }),
    endWithFailure: assign(({ context, event }) => {
      assertEvent(event, 'step.failed');
      return { outcome: outcomeOfFailure(context, event) };
    }),
    scheduleRetry: assign(({ context, event }) => ({
      retry: { stepId: context.stepId ?? '', attempt: context.attempt + 1 },
      retryAfterMs: event.type === 'step.failed' ? event.error.retryAfterMs : undefined,
    })),
    // An overflow's summarizing call is estimated by the prompt that overflowed (still in flight).
    countOverflow: assign(({ context }) => ({
      overflowCompactions: context.overflowCompactions + 1,
      tokensSpent: {
        ...context.tokensSpent,
        input: context.tokensSpent.input + context.inFlightPromptTokens,
      },
      compactionPromptTokens: context.inFlightPromptTokens,
    })),
    // A compaction is a request too. Counted when it starts (its estimated prompt), and again at
    // each recovery that sends it again, so a call cut by a crash still costs it; once it
    // completes, the last call's estimate gives way to its measured prompt and summary.
    startCompaction: assign(({ context, event }) => {
      assertEvent(event, 'compaction.started');
      const prompt = event.estimatedTokens ?? 0;
      return {
        tokensSpent: { ...context.tokensSpent, input: context.tokensSpent.input + prompt },
        inFlightPromptTokens: prompt,
        compactionPromptTokens: prompt,
      };
    }),
    resendCompaction: assign(({ context }) => ({
      tokensSpent: {
        ...context.tokensSpent,
        input: context.tokensSpent.input + context.compactionPromptTokens,
      },
      inFlightPromptTokens: context.compactionPromptTokens,
    })),
    markCompacted: assign(({ context, event }) => {
      assertEvent(event, 'compaction.completed');
      const { input, output } = context.tokensSpent;
      return {
        compactedSinceStep: true,
        tokensSpent: {
          input: input - context.inFlightPromptTokens + event.tokensBefore,
          output: output + event.tokensAfter,
        },
        inFlightPromptTokens: 0,
      };
    }),
    noteRecovered: assign(({ context }) => ({
      recoveries: context.recoveries + 1,
      inFlightPromptTokens: 0,
    })),
    endBudgetExhausted: assign({
      outcome: { status: 'failed', reason: 'budget_exhausted' } as TurnOutcome,
    }),
    recordSteering: assign(({ event }) => ({ lastSteeringSeq: event.seq })),
    recordDecision: assign(({ context, event }) => {
      assertEvent(event, 'tool.permission.decided');
      const { callId, decision, inputHash, by, reason } = event;
      return {
        calls: updateCall(context, callId, {
          status: 'decided',
          decision: { decision, inputHash, by, reason },
        }),
      };
    }),
    recordAsk: assign(({ context, event }) => {
      assertEvent(event, 'tool.permission.requested');
      return { calls: updateCall(context, event.callId, { status: 'asked' }) };
    }),
    recordStarted: assign(({ context, event }) => {
      assertEvent(event, 'tool.started');
      const executions = (callState(context, event.callId)?.executions ?? 0) + 1;
      return { calls: updateCall(context, event.callId, { status: 'started', executions }) };
    }),
    recordSettled: assign(({ context, event }) => {
      assertEvent(event, 'tool.settled');
      return { calls: updateCall(context, event.callId, { status: 'settled' }) };
    }),
    recordIndeterminate: assign(({ context, event }) => {
      assertEvent(event, 'tool.indeterminate');
      return { calls: updateCall(context, event.callId, { status: 'indeterminate' }) };
    }),
    // A call its tool can check waits for that answer (`checking`), else for a person.
    markForCheck: assign(({ context, event }) => {
      assertEvent(event, 'tool.indeterminate');
      const status = event.check === undefined ? 'indeterminate' : 'checking';
      return { calls: updateCall(context, event.callId, { status }) };
    }),
    // I8: `done` settles in the same append (`started` until then); `not-done` and `idempotent`
    // run again under the decision already granted for the same input hash; `unknown` asks.
    recordReconciled: assign(({ context, event }) => {
      assertEvent(event, 'tool.reconciled');
      const { answer, reason } = event;
      const status =
        answer === 'done' ? 'started' : answer === 'unknown' ? 'indeterminate' : 'decided';
      const reconciled = reason === undefined ? { answer } : { answer, reason };
      return { calls: updateCall(context, event.callId, { status, reconciled }) };
    }),
    // Recorded when the stop (or an abort decision) arrives, whether the run ends at once or
    // after its calls settle in `stopping`.
    recordAbort: assign(({ event }) => ({
      outcome: {
        status: 'aborted' as const,
        reason: event.type === 'tool.permission.decided' ? 'permission_abort' : 'stop_requested',
      },
    })),
    endStepLimit: assign({ outcome: { status: 'failed', reason: 'step_limit' } as TurnOutcome }),
    endInterrupted: assign({ outcome: { status: 'failed', reason: 'interrupted' } as TurnOutcome }),
    endCompactionFailed: assign(({ event }) => {
      assertEvent(event, 'compaction.failed');
      return {
        outcome: { status: 'failed' as const, reason: 'compaction_failed', error: event.error },
      };
    }),
    // Live, the actor that commits step.completed appends every call's decision in the same
    // write, so the machine passes `deciding` on facts alone. Deciders run only when a recovery
    // re-enters `deciding`: a log written before decisions shared that write, or a write cut
    // after its step.completed.
    spawnDeciders: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'run.recovered') return;
      for (const call of context.calls)
        if (call.status === 'proposed')
          enqueue.spawnChild('settleTool', settleChild(context, call, { phase: 'decide' }));
    }),
    spawnRunners: enqueueActions(({ context, enqueue }) => {
      for (const { decision, ...call } of context.calls) {
        if (call.status !== 'decided' || decision === undefined) continue;
        const execution = (call.executions ?? 0) + 1;
        enqueue.spawnChild(
          'settleTool',
          settleChild(context, call, { phase: 'run', decision, execution }),
        );
      }
    }),
    spawnReconcilers: enqueueActions(({ context, enqueue }) => {
      for (const call of context.calls)
        if (call.status === 'checking')
          enqueue.spawnChild(
            'settleTool',
            settleChild(context, call, { phase: 'reconcile', recovery: context.recoveries }),
          );
    }),
    spawnAbandoners: enqueueActions(({ context, enqueue }) => {
      for (const call of context.calls) {
        // A started call still has its own settlement running (it honours the stop grace).
        if (call.status === 'settled' || call.status === 'started') continue;
        // Stop wins over a check under way: the call may have run, and nobody waits to know.
        const outcome =
          call.status === 'indeterminate' || call.status === 'checking' ? 'unknown' : 'cancelled';
        enqueue.spawnChild('settleTool', settleChild(context, call, { phase: 'abandon', outcome }));
      }
    }),
    stopToolChildren: enqueueActions(({ context, enqueue }) => {
      for (const call of context.calls)
        for (const phase of settlePhases) enqueue.stopChild(settleChildId(phase, context, call));
    }),
    stopDeciders: enqueueActions(({ context, enqueue }) => {
      for (const call of context.calls) enqueue.stopChild(settleChildId('decide', context, call));
    }),
  },
}).createMachine({
  id: 'turn',
  // Recorded in each run.started. Bump it with any change to states or transitions: a run begun
  // by another version is resumed through its recorded states (rehydrate.ts), not replayed strictly.
  version: turnMachineVersion,
  context: ({ input }) => initialContext(input),
  initial: 'projecting',
  output: ({ context }) => outcomeOf(context),
  on: {
    'steering.received': { actions: 'recordSteering' },
  },
  states: {
    projecting: {
      // Before any request (a step, a retry, one after a recovery, a compaction): past the
      // run's token budget it ends here, and prepareStep never starts.
      always: { guard: 'budgetExhausted', target: 'terminal', actions: 'endBudgetExhausted' },
      invoke: {
        src: 'prepareStep',
        input: ({ context }) => ({
          sessionId: context.sessionId,
          runId: context.runId,
          retry: context.retry,
          mayCompact: !context.compactedSinceStep,
        }),
      },
      on: {
        'step.started': { target: 'requesting', actions: 'startStep' },
        'compaction.started': {
          guard: 'mayCompact',
          target: 'compacting',
          actions: 'startCompaction',
        },
        'run.stop.requested': { target: 'terminal', actions: ['recordAbort', 'abortRun'] },
        'run.recovered': { target: 'projecting', reenter: true, actions: 'noteRecovered' },
      },
    },
    compacting: {
      invoke: {
        src: 'summarize',
        input: ({ context, event }) => ({
          sessionId: context.sessionId,
          runId: context.runId,
          reason: event.type === 'step.failed' ? ('overflow' as const) : ('budget' as const),
        }),
      },
      on: {
        'compaction.completed': { target: 'projecting', actions: 'markCompacted' },
        'compaction.failed': { target: 'terminal', actions: 'endCompactionFailed' },
        'run.stop.requested': { target: 'terminal', actions: ['recordAbort', 'abortRun'] },
        // The summarizing call is sent again: past the budget, the run ends instead.
        'run.recovered': [
          {
            guard: 'budgetExhausted',
            target: 'terminal',
            actions: ['noteRecovered', 'endBudgetExhausted'],
          },
          {
            target: 'compacting',
            reenter: true,
            actions: ['noteRecovered', 'resendCompaction'],
          },
        ],
      },
    },
    requesting: {
      initial: 'streaming',
      on: {
        'run.stop.requested': { target: 'terminal', actions: ['recordAbort', 'abortRun'] },
      },
      states: {
        streaming: {
          invoke: {
            src: 'providerStep',
            // Entered only by step.started, which carries the prepared request on a live run.
            input: ({ context, event }) => ({
              sessionId: context.sessionId,
              runId: context.runId,
              stepId: context.stepId ?? '',
              attempt: context.attempt,
              request: event.type === 'step.started' ? event.prepared : undefined,
            }),
          },
          on: {
            'step.completed': [
              { guard: 'hasToolCalls', target: '#turn.settlingTools', actions: 'completeStep' },
              // Steering that arrived during the step is answered, even if the model ended its turn.
              {
                guard: and(['steeredDuringStep', not('isLastAllowedStep')]),
                target: '#turn.projecting',
                actions: 'completeStep',
              },
              { target: '#turn.terminal', actions: ['completeStep', 'endWithFinalStep'] },
            ],
            'step.failed': [
              { guard: 'firstOverflow', target: '#turn.compacting', actions: 'countOverflow' },
              { guard: 'retryable', target: 'backingOff', actions: 'scheduleRetry' },
              { target: '#turn.terminal', actions: 'endWithFailure' },
            ],
            'run.recovered': [
              {
                guard: 'attemptsLeft',
                target: '#turn.projecting',
                actions: ['noteRecovered', 'scheduleRetry'],
              },
              { target: '#turn.terminal', actions: ['noteRecovered', 'endInterrupted'] },
            ],
          },
        },
        backingOff: {
          invoke: {
            src: 'retryTimer',
            input: ({ context }) => ({
              runId: context.runId,
              stepId: context.retry?.stepId ?? '',
              attempt: context.attempt,
              retryAfterMs: context.retryAfterMs,
            }),
          },
          on: {
            'retry.due': { guard: 'isDueRetry', target: '#turn.projecting' },
            // The backoff is only a wait: after a restart the retry is due at once.
            'run.recovered': { target: '#turn.projecting', actions: 'noteRecovered' },
          },
        },
      },
    },
    settlingTools: {
      initial: 'deciding',
      exit: 'stopToolChildren',
      on: {
        'run.stop.requested': { target: '.stopping', actions: ['recordAbort', 'abortRun'] },
      },
      states: {
        deciding: {
          entry: 'spawnDeciders',
          exit: 'stopDeciders',
          always: [
            {
              guard: and(['allDecided', 'abortDecided']),
              target: 'stopping',
              actions: 'recordAbort',
            },
            { guard: and(['allDecided', 'needsPerson']), target: '#turn.awaitingPermission' },
            { guard: 'allDecided', target: 'running' },
          ],
          on: {
            'tool.settled': { guard: 'callProposed', actions: 'recordSettled' },
            'tool.permission.decided': [
              { guard: 'policyDecision', actions: 'recordDecision' },
              { guard: 'userDecision', actions: 'recordDecision' },
            ],
            'tool.permission.requested': { guard: 'callProposed', actions: 'recordAsk' },
            'run.recovered': { target: 'deciding', reenter: true, actions: 'noteRecovered' },
          },
        },
        running: {
          entry: 'spawnRunners',
          always: [
            // maxSteps: the last allowed step's calls still settle, then no further request.
            {
              guard: and(['allSettled', 'stepLimitReached']),
              target: '#turn.terminal',
              actions: 'endStepLimit',
            },
            { guard: 'allSettled', target: '#turn.projecting' },
          ],
          on: {
            'tool.started': { guard: 'startAllowed', actions: 'recordStarted' },
            'tool.settled': { guard: 'callOpen', actions: 'recordSettled' },
            'tool.indeterminate': { guard: 'callMayBeMarked', actions: 'markForCheck' },
            'run.recovered': [
              { guard: 'anyChecking', target: 'reconciling', actions: 'noteRecovered' },
              {
                guard: 'needsPerson',
                target: '#turn.awaitingPermission',
                actions: 'noteRecovered',
              },
              { target: 'running', reenter: true, actions: 'noteRecovered' },
            ],
          },
        },
        // After a restart, before asking anyone: each call that may have run and whose tool can
        // tell (`reconcile`) or says running again is safe (`idempotent`) is checked.
        reconciling: {
          entry: 'spawnReconcilers',
          always: [
            {
              guard: and(['checksAnswered', 'needsPerson']),
              target: '#turn.awaitingPermission',
            },
            { guard: 'checksAnswered', target: 'running' },
          ],
          on: {
            'tool.reconciled': { guard: 'callChecking', actions: 'recordReconciled' },
            // A call no tool can check is pending for a person already: its answer is taken.
            'tool.permission.decided': { guard: 'userDecision', actions: 'recordDecision' },
            'tool.settled': { guard: 'callOpen', actions: 'recordSettled' },
            'tool.indeterminate': { guard: 'callMayBeMarked', actions: 'markForCheck' },
            'run.recovered': { target: 'reconciling', reenter: true, actions: 'noteRecovered' },
          },
        },
        stopping: {
          tags: ['stopping'],
          entry: 'spawnAbandoners',
          // The abort was recorded on the way in.
          always: { guard: 'allSettled', target: '#turn.terminal' },
          on: {
            // Already stopping: a second stop is not a transition (forbidden, not re-entered).
            'run.stop.requested': {},
            'tool.settled': { guard: 'callOpen', actions: 'recordSettled' },
            'tool.indeterminate': { guard: 'callStarted', actions: 'recordIndeterminate' },
            'run.recovered': { target: 'stopping', reenter: true, actions: 'noteRecovered' },
          },
        },
      },
    },
    awaitingPermission: {
      tags: ['parked', 'needsPerson'],
      // Parked: no actor, no timer. The runtime may drop the live actor and rehydrate it from
      // the log when a decision arrives.
      always: [
        { guard: 'abortDecided', target: 'settlingTools.stopping', actions: 'recordAbort' },
        { guard: not('needsPerson'), target: 'settlingTools.running' },
      ],
      on: {
        'tool.permission.decided': { guard: 'userDecision', actions: 'recordDecision' },
        'run.stop.requested': {
          target: 'settlingTools.stopping',
          actions: ['recordAbort', 'abortRun'],
        },
        // A restart asks each checkable call's tool again before the person answers.
        'tool.indeterminate': { guard: 'callMayBeMarked', actions: 'markForCheck' },
        'run.recovered': [
          {
            guard: 'anyChecking',
            target: 'settlingTools.reconciling',
            actions: 'noteRecovered',
          },
          { actions: 'noteRecovered' },
        ],
      },
    },
    terminal: {
      type: 'final',
    },
  },
});

/** The turn machine's type: this version, or another one with the same events (upgrade tests). */
export type TurnMachine = typeof turnMachine;
/** A live turn machine actor. */
export type TurnActor = Actor<TurnMachine>;
/** A turn machine snapshot (live or folded from the log). */
export type TurnSnapshot = SnapshotFrom<TurnMachine>;
