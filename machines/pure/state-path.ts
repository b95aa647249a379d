import type { StateValue } from 'xstate';

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
