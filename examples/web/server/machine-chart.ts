// The turn machine's chart for the log viewer, read from `turnMachine`'s own definition (its
// state nodes and transitions), so the picture can never drift from the machine.
import type { AnyStateMachine, StateNode } from 'xstate';
import { turnMachine } from '../../../index.ts';

/** One state of the chart; its `id` is the dotted path facts record in `state`. */
export interface ChartState {
  id: string;
  /** The state's own name (`streaming` for `requesting.streaming`). */
  key: string;
  /** The compound state it is in, if any. */
  parent: string | undefined;
  type: 'atomic' | 'compound' | 'parallel' | 'final' | 'history';
  /** The child a compound state enters first. */
  initial: string | undefined;
}

/** One transition: the event (`always` when it is eventless), from a state to another. */
export interface ChartTransition {
  source: string;
  target: string;
  event: string;
}

/** The states and transitions of a state machine, in definition order. */
export interface MachineChart {
  states: ChartState[];
  transitions: ChartTransition[];
  /** The state the machine starts in. */
  initial: string;
}

// biome-ignore lint/suspicious/noExplicitAny: a chart reads any machine's nodes
type Node = StateNode<any, any>;

const idOf = (node: Node) => node.path.join('.');

/**
 * The chart of a machine (default: the turn machine) from its definition: every state node
 * below the root, and every transition with a target (transitions without one change only
 * the context, such as `steering.received`).
 *
 * @example
 * machineChart().states.map((state) => state.id); // ['projecting', 'compacting', 'requesting', …]
 */
export function machineChart(machine: AnyStateMachine = turnMachine): MachineChart {
  const states: ChartState[] = [];
  const transitions: ChartTransition[] = [];
  const visit = (node: Node) => {
    if (node.path.length > 0) {
      const initial = node.type === 'compound' ? node.initial.target[0] : undefined;
      states.push({
        id: idOf(node),
        key: node.key,
        parent: node.parent && node.parent.path.length > 0 ? idOf(node.parent) : undefined,
        type: node.type,
        initial: initial === undefined ? undefined : idOf(initial as Node),
      });
      const definitions = [...node.transitions.values()].flat().concat(node.always ?? []);
      for (const definition of definitions) {
        for (const target of definition.target ?? []) {
          // XState files an eventless (`always`) transition under the empty event type.
          const event =
            String(definition.eventType) === '' ? 'always' : String(definition.eventType);
          const edge = { source: idOf(node), target: idOf(target as Node), event };
          const known = transitions.some(
            (other) =>
              other.source === edge.source && other.target === edge.target && other.event === event,
          );
          if (!known) transitions.push(edge);
        }
      }
    }
    for (const child of Object.values(node.states)) visit(child as Node);
  };
  visit(machine.root as Node);
  const first = machine.root.initial.target[0];
  return { states, transitions, initial: first === undefined ? '' : idOf(first as Node) };
}
