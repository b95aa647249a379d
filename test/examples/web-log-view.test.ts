import { describe, expect, it } from 'vitest';
import type { Fact } from '../../events/facts.ts';
import { logDamage, logViewAt } from '../../examples/web/server/log-view.ts';
import { machineChart } from '../../examples/web/server/machine-chart.ts';
import { layoutChart } from '../../examples/web/src/chart-layout.ts';
import { turnMachine } from '../../machines/pure/turn-machine.ts';
import { sampleLogs } from '../helpers/sample-logs.ts';

describe('machineChart', () => {
  const chart = machineChart();

  it('has every state of turnMachine, named as facts record them', () => {
    const ids: string[] = [];
    const visit = (node: { path: string[]; states: Record<string, unknown> }) => {
      if (node.path.length > 0) ids.push(node.path.join('.'));
      for (const child of Object.values(node.states)) visit(child as typeof node);
    };
    visit(turnMachine.root as never);
    expect(chart.states.map((state) => state.id)).toEqual(ids);
    expect(chart.initial).toBe('projecting');
    expect(chart.states.find((state) => state.id === 'requesting')).toMatchObject({
      type: 'compound',
      initial: 'requesting.streaming',
    });
  });

  it('reads the transitions from the definition, eventless ones as always', () => {
    expect(chart.transitions).toContainEqual({
      source: 'requesting.streaming',
      target: 'settlingTools',
      event: 'step.completed',
    });
    expect(chart.transitions).toContainEqual({
      source: 'settlingTools.deciding',
      target: 'awaitingPermission',
      event: 'always',
    });
    // steering.received changes only the context: no target, no edge.
    expect(chart.transitions.some((transition) => transition.event === 'steering.received')).toBe(
      false,
    );
  });
});

describe('layoutChart', () => {
  const layout = layoutChart(machineChart());
  const box = (id: string) => layout.boxes.find((candidate) => candidate.state.id === id);
  const inside = (inner: string, outer: string) => {
    const [a, b] = [box(inner), box(outer)];
    if (a === undefined || b === undefined) return false;
    return (
      a.x >= b.x && a.y >= b.y && a.x + a.width <= b.x + b.width && a.y + a.height <= b.y + b.height
    );
  };

  it('draws every state once, children inside their parent, the final state in the last column', () => {
    expect(layout.boxes.map((candidate) => candidate.state.id).sort()).toEqual(
      machineChart()
        .states.map((state) => state.id)
        .sort(),
    );
    expect(inside('requesting.streaming', 'requesting')).toBe(true);
    expect(inside('settlingTools.stopping', 'settlingTools')).toBe(true);
    const terminal = box('terminal');
    expect(Math.max(...layout.boxes.map((candidate) => candidate.x))).toBe(terminal?.x);
    expect(box('projecting')?.x).toBe(Math.min(...layout.boxes.map((candidate) => candidate.x)));
  });

  it('keeps top-level boxes apart and merges transitions between the same two states', () => {
    const top = layout.boxes.filter((candidate) => candidate.state.parent === undefined);
    for (const a of top) {
      for (const b of top) {
        if (a === b) continue;
        const apart =
          a.x + a.width <= b.x ||
          b.x + b.width <= a.x ||
          a.y + a.height <= b.y ||
          b.y + b.height <= a.y;
        expect(apart, `${a.state.id} and ${b.state.id} overlap`).toBe(true);
      }
    }
    expect(
      layout.edges.find(
        (edge) => edge.source === 'requesting.streaming' && edge.target === 'terminal',
      )?.events,
    ).toEqual(['step.completed', 'step.failed', 'run.recovered']);
    expect(layout.edges.every((edge) => edge.path.startsWith('M '))).toBe(true);
  });
});

describe('layoutChart arrows', () => {
  const layout = layoutChart(machineChart());
  const boxOf = new Map(layout.boxes.map((box) => [box.state.id, box]));
  const lineage = (id: string): string[] => {
    const parent = boxOf.get(id)?.state.parent;
    return parent === undefined ? [id] : [id, ...lineage(parent)];
  };
  /** The path's points (line ends, and each rounded corner's control point), in order. */
  const points = (path: string) =>
    [...path.matchAll(/(-?\d+(?:\.\d+)?) (-?\d+(?:\.\d+)?)/g)].map(([, x, y]) => ({
      x: Number(x),
      y: Number(y),
    }));

  it('never runs an arrow through a box other than its ends and the states holding them', () => {
    let checked = 0;
    for (const edge of layout.edges) {
      const own = new Set([...lineage(edge.source), ...lineage(edge.target)]);
      const path = points(edge.path);
      for (let index = 1; index < path.length; index += 1) {
        const [a, b] = [path[index - 1], path[index]];
        if (a === undefined || b === undefined) continue;
        for (const box of layout.boxes) {
          if (own.has(box.state.id)) continue;
          // The segment's bounding box overlaps the box's inside (a hair in from its border).
          const crosses =
            Math.max(a.x, b.x) > box.x + 0.5 &&
            Math.min(a.x, b.x) < box.x + box.width - 0.5 &&
            Math.max(a.y, b.y) > box.y + 0.5 &&
            Math.min(a.y, b.y) < box.y + box.height - 0.5;
          expect(crosses, `${edge.source} → ${edge.target} crosses ${box.state.id}`).toBe(false);
          checked += 1;
        }
      }
    }
    expect(checked).toBeGreaterThan(1000);
  });

  it('draws arrows along the axes, and brings every arrow into one side of a state to one point', () => {
    const heads = new Map<string, string>();
    for (const edge of layout.edges) {
      const corners = points(edge.path);
      const [before, end] = corners.slice(-2);
      if (before === undefined || end === undefined) throw new Error(edge.path);
      // The last run is horizontal, into the target's left or right side.
      expect(before.y, `${edge.source} → ${edge.target}`).toBe(end.y);
      const box = boxOf.get(edge.target);
      const side =
        end.x === box?.x ? 'left' : end.x === (box?.x ?? 0) + (box?.width ?? 0) ? 'right' : 'none';
      expect(side, `${edge.source} → ${edge.target}`).not.toBe('none');
      const key = `${edge.target}:${side}`;
      const at = `${end.x},${end.y}`;
      expect(heads.get(key) ?? at, key).toBe(at);
      heads.set(key, at);
    }
    // terminal: every way into it ends under one arrowhead.
    expect(layout.edges.filter((edge) => edge.target === 'terminal').length).toBeGreaterThan(4);
    expect([...heads.keys()].filter((key) => key.startsWith('terminal:'))).toEqual([
      'terminal:left',
    ]);
  });
});

describe('logViewAt', () => {
  it.each(sampleLogs())(
    'replays every fact of $name to its recorded state, and every request to its recorded size',
    ({ facts }) => {
      for (const fact of facts) {
        const view = logViewAt(facts, fact.seq);
        if (view === undefined) throw new Error(`no view at ${fact.seq}`);
        expect(view.state).toEqual({
          recorded: fact.state,
          replayed: fact.state,
          divergence: undefined,
        });
        if (fact.type === 'step.started') {
          expect(view.request.kind).toBe('sent');
          expect(view.request.messages).toHaveLength(fact.request.messageCount);
        }
      }
      expect(logDamage(facts)).toEqual([]);
    },
  );

  it('shows the messages the next request would carry between steps, and the read model through that seq', () => {
    const facts = sampleLogs().find((log) => log.name === 'permission')?.facts ?? [];
    const view = logViewAt(facts, 4);
    expect(view?.request).toMatchObject({ kind: 'next', provider: 'anthropic.messages' });
    expect(view?.request.messages.map((message) => message.role)).toEqual(['user', 'assistant']);
    expect(view?.readModel.runs).toHaveLength(1);
    expect(view?.readModel.pending.map((open) => open.kind)).toEqual(['permission']);
    expect(logViewAt(facts, 99)).toBeUndefined();
  });

  it('names a recorded state the machine does not reach, instead of a state', () => {
    const facts = (sampleLogs().find((log) => log.name === 'stop')?.facts ?? []).map(
      (fact): Fact => (fact.seq === 3 ? { ...fact, state: 'awaitingPermission' } : fact),
    );
    const view = logViewAt(facts, 5);
    expect(view?.state.replayed).toBeUndefined();
    expect(view?.state.divergence).toMatch(
      /fact seq 3 \(step\.completed\) recorded state awaitingPermission, but the turn machine reaches settlingTools\.deciding/,
    );
  });
});
