import { initialTransition } from 'xstate';
import type { Fact, FactOf } from '../events/facts.ts';
import {
  isTurnlogErrorNamed,
  TurnlogError,
  type TurnlogErrorOptions,
} from '../events/turnlog-error.ts';
import { pureTransition } from './pure-transition.ts';
import type { TurnActor, TurnMachine } from './run-driver.ts';
import { stateToString } from './state-path.ts';
import { inputFromRunStarted } from './turn-context.ts';
import { turnMachine } from './turn-machine.ts';

type TurnSnapshot = ReturnType<TurnActor['getSnapshot']>;

/** A fact whose recorded `state` is not the state the machine reaches when the log is replayed. */
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

/**
 * Rebuilds a run's machine snapshot from its facts by folding them through XState's pure
 * `initialTransition()` / `transition()` (I1). Nothing is started: no provider request, no tool
 * (I8). Every fact's recorded `state` is checked; the first mismatch throws
 * `ReplayDivergenceError` naming its `seq`.
 *
 * @param sessionFacts the session's facts (other runs' facts are skipped)
 */
export function foldRun(
  sessionFacts: readonly Fact[],
  runId: string,
  machine: TurnMachine = turnMachine,
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
  check(first, snapshot);
  let ended: FactOf<'run.ended'> | undefined;
  for (const fact of rest) {
    if (fact.type === 'run.ended') {
      ended = fact;
      check(fact, snapshot);
      continue;
    }
    snapshot = pureTransition(machine, snapshot, fact);
    check(fact, snapshot);
  }
  return { snapshot, facts, ended };
}

function check(fact: Fact, snapshot: TurnSnapshot) {
  const replayed = stateToString(snapshot.value);
  // Facts written before `state` was recorded carry none; there is nothing to compare.
  if (fact.state === undefined || fact.state === replayed) return;
  throw new ReplayDivergenceError({
    message:
      `Replaying session ${fact.sessionId}: fact seq ${fact.seq} (${fact.type}) recorded state ` +
      `${fact.state}, but the turn machine reaches ${replayed}. The log was written by a machine ` +
      'with other rules, or edited; keep it for inspection and do not resume this run.',
    sessionId: fact.sessionId,
    seq: fact.seq,
    recorded: fact.state,
    replayed,
  });
}
