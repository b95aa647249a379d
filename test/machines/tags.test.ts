import { describe, expect, it } from 'vitest';
import type { AnyStateNode } from 'xstate';
import { recordedStateHasTag } from '../../machines/pure/state-tags.ts';
import { turnMachine } from '../../machines/pure/turn-machine.ts';

/** Every state node of the turn machine, with its dotted path. */
function statesOf(node: AnyStateNode, prefix = ''): { path: string; node: AnyStateNode }[] {
  return Object.entries(node.states).flatMap(([key, child]) => {
    const path = prefix === '' ? key : `${prefix}.${key}`;
    return [{ path, node: child }, ...statesOf(child, path)];
  });
}

describe("the turn machine's lifecycle tags", () => {
  const states = statesOf(turnMachine.root);
  const tagged = (tag: string) =>
    states.filter(({ node }) => node.tags.includes(tag)).map(({ path }) => path);

  it('park and ask a person in awaitingPermission, and stop in settlingTools.stopping', () => {
    expect(tagged('parked')).toEqual(['awaitingPermission']);
    expect(tagged('needsPerson')).toEqual(['awaitingPermission']);
    expect(tagged('stopping')).toEqual(['settlingTools.stopping']);
  });

  it('tag as parked only states that run no actor (the runtime drops the live actor there)', () => {
    for (const { path, node } of states.filter(({ node }) => node.tags.includes('parked'))) {
      expect(node.invoke, path).toEqual([]);
      expect(node.entry.length + Object.keys(node.states).length, path).toBe(0);
    }
  });

  it('answer for a recorded state what the chart says of it', () => {
    expect(recordedStateHasTag('awaitingPermission', 'needsPerson')).toBe(true);
    expect(recordedStateHasTag('settlingTools.stopping', 'stopping')).toBe(true);
    expect(recordedStateHasTag('settlingTools.running', 'stopping')).toBe(false);
    expect(recordedStateHasTag('requesting.streaming', 'needsPerson')).toBe(false);
    expect(recordedStateHasTag('noSuchState', 'needsPerson')).toBe(false);
    expect(recordedStateHasTag('settlingTools.noSuchState', 'stopping')).toBe(false);
    expect(recordedStateHasTag(undefined, 'needsPerson')).toBe(false);
  });
});
