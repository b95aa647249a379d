import type { StateValue } from 'xstate';
import type { TurnMachine } from './turn-machine.ts';

/**
 * A machine state value as the dotted path recorded in each fact's `state`:
 * `'projecting'`, `{ requesting: 'streaming' }` → `'requesting.streaming'`.
 */
export function statePath(value: StateValue): string {
  if (typeof value === 'string') return value;
  const [key, child] = Object.entries(value)[0] ?? [];
  if (key === undefined) return '';
  return child === undefined ? key : `${key}.${statePath(child as StateValue)}`;
}

/** The state node a dotted path (`settlingTools.running`) names in `machine`, if it has one. */
export function stateNodeAt(machine: TurnMachine, path: string) {
  let states = machine.root.states;
  let node: (typeof states)[string] | undefined;
  for (const key of path.split('.')) {
    node = Object.hasOwn(states, key) ? states[key] : undefined;
    if (node === undefined) return undefined;
    states = node.states;
  }
  return node;
}
