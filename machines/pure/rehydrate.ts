import { initialTransition, type StateValue } from 'xstate';
import type { Fact, FactOf } from '../../events/facts.ts';
import {
  isTurnlogErrorNamed,
  TurnlogError,
  type TurnlogErrorOptions,
} from '../../events/turnlog-error.ts';
import { pureTransition } from './pure-transition.ts';
import { stateNodeAt, statePath } from './state-path.ts';
import { inputFromRunStarted, outcomeOf, type TurnContext } from './turn-context.ts';
import { type TurnMachine, type TurnSnapshot, turnMachine } from './turn-machine.ts';

/**
 * A run whose log the turn machine cannot rebuild: a fact whose recorded `state` is not the state
 * the machine reaches, a fact the machine does not take (one after the run's end), a state this
 * machine does not have, or a run begun by a newer machine.
 */
export class ReplayDivergenceError extends TurnlogError {
  static isInstance = isTurnlogErrorNamed<ReplayDivergenceError>('ReplayDivergenceError');
  readonly sessionId: string;
  readonly seq: number;
  readonly recorded: string | undefined;
  readonly replayed: string;

  constructor(
    options: TurnlogErrorOptions & {
      sessionId: string;
      seq: number;
      recorded: string | undefined;
      replayed: string;
    },
  ) {
    super(options);
    this.name = 'ReplayDivergenceError';
    this.sessionId = options.sessionId;
    this.seq = options.seq;
    this.recorded = options.recorded;
    this.replayed = options.replayed;
  }
}

export interface FoldedRun {
  /** The machine snapshot after the run's last fact (no actor was started to build it). */
  snapshot: TurnSnapshot;
  /** The run's facts, in `seq` order. */
  facts: Fact[];
  /** The run's `run.ended`, if it has one. */
  ended: FactOf<'run.ended'> | undefined;
}

/** A run rebuilt for resuming, and how (see `rehydrateRun`). */
export interface RehydratedRun extends FoldedRun {
  /** `replayed`: strictly, by the machine that began it; `upgraded`: through its recorded states. */
  path: 'replayed' | 'upgraded';
}

/**
 * Rebuilds a run's machine snapshot from its facts by folding them through XState's pure
 * `initialTransition()` / `transition()` (I1). Nothing is started: no provider request, no tool
 * (I8). Strict: the first fact whose recorded `state` is not the one the machine reaches, or that
 * the machine does not take at all (a `steering.received` after the run reached `terminal`),
 * throws `ReplayDivergenceError` naming its `seq`.
 *
 * @param sessionFacts the session's facts (other runs' facts are skipped)
 */
export function foldRun(
  sessionFacts: readonly Fact[],
  runId: string,
  machine: TurnMachine = turnMachine,
): FoldedRun {
  return fold(sessionFacts, runId, machine, (fact, replayed) => {
    throw divergence(fact, replayed);
  });
}

/**
 * Rebuilds an unfinished run to resume it with `machine`, whichever turnlog began it:
 * - begun by this machine version (`run.started.machineVersion`): `foldRun`, strictly;
 * - begun by an older version, or before versions were recorded: the facts go through this
 *   machine for its context, and where its state differs from a fact's recorded `state`, the
 *   recorded state wins (this machine must have it). The run resumes where it was, under the
 *   current rules; being old never makes it damaged;
 * - begun by a newer version: `ReplayDivergenceError` (resume it with that turnlog).
 * A fact after the run's end, or a recorded state this machine does not have, is a
 * `ReplayDivergenceError` on every path. See architecture/turn-machine.md, "Upgrades".
 */
export function rehydrateRun(
  sessionFacts: readonly Fact[],
  runId: string,
  machine: TurnMachine = turnMachine,
): RehydratedRun {
  const started = sessionFacts.find((fact) => fact.runId === runId);
  const recorded = started?.type === 'run.started' ? started.machineVersion : undefined;
  if (recorded === machine.version)
    return { ...foldRun(sessionFacts, runId, machine), path: 'replayed' };
  if (started !== undefined && Number(recorded) > Number(machine.version)) {
    throw new ReplayDivergenceError({
      message: `Run ${runId} of session ${started.sessionId} was begun by turn machine version ${recorded}, newer than this turnlog's (${machine.version}); resume it with the turnlog that began it.`,
      sessionId: started.sessionId,
      seq: started.seq,
      recorded: `machine version ${recorded}`,
      replayed: `machine version ${machine.version}`,
    });
  }
  const folded = fold(sessionFacts, runId, machine, (fact, replayed) => {
    // A fact without a recorded state (the oldest logs) has nothing to follow: keep the replay.
    if (fact.state === undefined) return replayed;
    if (stateNodeAt(machine, fact.state) === undefined) throw divergence(fact, replayed);
    const context = replayed.context as TurnContext;
    return machine.resolveState({
      value: stateValue(fact.state),
      context,
      output: outcomeOf(context),
    }) as TurnSnapshot;
  });
  return { ...folded, path: 'upgraded' };
}

/**
 * Folds a run's facts; `diverged` decides what a fact whose recorded state the machine does not
 * reach (or that it does not take) leads to: throw, or the snapshot to go on from.
 */
function fold(
  sessionFacts: readonly Fact[],
  runId: string,
  machine: TurnMachine,
  diverged: (fact: Fact, replayed: TurnSnapshot) => TurnSnapshot,
): FoldedRun {
  const facts = sessionFacts.filter((fact) => fact.runId === runId);
  const [first, ...rest] = facts;
  if (first === undefined || first.type !== 'run.started') {
    throw new ReplayDivergenceError({
      message: `Run ${runId} does not begin with run.started; its log is damaged (see planRecovery).`,
      sessionId: first?.sessionId ?? '',
      seq: first?.seq ?? 0,
      recorded: first?.type,
      replayed: 'run.started',
    });
  }
  let [snapshot] = initialTransition(machine, inputFromRunStarted(first)) as [
    TurnSnapshot,
    unknown,
  ];
  if (!reaches(first, snapshot)) snapshot = diverged(first, snapshot);
  let ended: FactOf<'run.ended'> | undefined;
  for (const fact of rest) {
    if (fact.type === 'run.ended') {
      ended = fact;
      if (!reaches(fact, snapshot)) snapshot = diverged(fact, snapshot);
      continue;
    }
    // I7: nothing follows the end. The root takes steering in any state, a final one included,
    // so a fact after `terminal` would otherwise fold into a finished run.
    if (snapshot.status !== 'active') throw divergence(fact, snapshot);
    const next = pureTransition(machine, snapshot, fact);
    // XState returns the very same snapshot when no transition takes the event.
    snapshot = next === snapshot || !reaches(fact, next) ? diverged(fact, next) : next;
  }
  return { snapshot, facts, ended };
}

/** True when the fact records no state (written before `state` existed) or the one replayed. */
function reaches(fact: Fact, snapshot: TurnSnapshot): boolean {
  return fact.state === undefined || fact.state === statePath(snapshot.value);
}

function divergence(fact: Fact, snapshot: TurnSnapshot): ReplayDivergenceError {
  const replayed = statePath(snapshot.value);
  const what =
    snapshot.status !== 'active' && fact.type !== 'run.ended'
      ? `comes after the run reached ${replayed} and ended`
      : fact.state === replayed
        ? `is not a fact the turn machine takes in ${replayed}`
        : `recorded state ${fact.state}, but the turn machine reaches ${replayed}`;
  return new ReplayDivergenceError({
    message:
      `Replaying session ${fact.sessionId}: fact seq ${fact.seq} (${fact.type}) ${what}. The log ` +
      'was written by a machine with other rules, or edited; keep it for inspection and do not resume this run.',
    sessionId: fact.sessionId,
    seq: fact.seq,
    recorded: fact.state,
    replayed,
  });
}

/** `'settlingTools.running'` → `{ settlingTools: 'running' }`. */
function stateValue(path: string): StateValue {
  const [head = '', ...rest] = path.split('.');
  return rest.length === 0 ? head : { [head]: stateValue(rest.join('.')) };
}
