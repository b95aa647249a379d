import { stateNodeAt } from './state-path.ts';
import type { TurnTag } from './turn-context.ts';
import { turnMachine } from './turn-machine.ts';

const tagsByPath = new Map<string, readonly string[]>();

/**
 * True when the state a fact recorded (its `state`, a dotted path such as
 * `settlingTools.stopping`) carries `tag` in the turn machine: a reader of the log asks the chart
 * what a state means (`needsPerson`: the run waits for a person) instead of naming the state.
 * `false` for a fact without a state or a path this machine does not have.
 */
export function recordedStateHasTag(state: string | undefined, tag: TurnTag): boolean {
  if (state === undefined) return false;
  let tags = tagsByPath.get(state);
  if (tags === undefined) {
    tags = stateNodeAt(turnMachine, state)?.tags ?? [];
    tagsByPath.set(state, tags);
  }
  return tags.includes(tag);
}
