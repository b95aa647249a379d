import type { Fact, FactOf } from './facts.ts';
import { ProjectionInputError } from './projection-input-error.ts';

/**
 * How a run ended, judged from the log:
 * - `ended`: exactly one `run.ended` (I7), in `fact`;
 * - `missing`: none yet (the run is open, or was interrupted);
 * - `damaged`: more than one, all in `ended` (log order); nothing picks one for you.
 */
export type TerminalClassification =
  | { kind: 'ended'; fact: FactOf<'run.ended'> }
  | { kind: 'missing' }
  | { kind: 'damaged'; ended: FactOf<'run.ended'>[] };

/**
 * Classifies the terminal fact of one run. Pass one run's facts, or a session's facts with the
 * `runId` to look at; facts of several runs without a `runId` throw `ProjectionInputError`.
 *
 * @example
 * const terminal = classifyTerminal(facts, { runId });
 * if (terminal.kind === 'ended') console.log(terminal.fact.status);
 */
export function classifyTerminal(
  facts: readonly Fact[],
  options: { runId?: string } = {},
): TerminalClassification {
  const runId = options.runId ?? onlyRunId(facts);
  const ended = facts.filter(
    (fact): fact is FactOf<'run.ended'> => fact.type === 'run.ended' && fact.runId === runId,
  );
  const [first] = ended;
  if (first === undefined) return { kind: 'missing' };
  return ended.length === 1 ? { kind: 'ended', fact: first } : { kind: 'damaged', ended };
}

function onlyRunId(facts: readonly Fact[]): string | undefined {
  const runIds = [...new Set(facts.map((fact) => fact.runId))];
  if (runIds.length > 1) {
    throw new ProjectionInputError({
      projection: 'classifyTerminal',
      message: `classifyTerminal: the facts belong to ${runIds.length} runs (${runIds.join(', ')}); pass { runId } to say which run to classify`,
    });
  }
  return runIds[0];
}
