// Lays out a machine chart (examples/web/server/machine-chart.ts) for an SVG drawing: top-level
// states in columns by their distance from the initial state (final states last), compound
// states as boxes holding their children. Pure: the same chart always gives the same picture.
import type { ChartState, MachineChart } from '../server/machine-chart.ts';

/** A state's box. */
export interface Box {
  state: ChartState;
  x: number;
  y: number;
  width: number;
  height: number;
}

/** The transitions from one state to another, as one curve from box border to box border. */
export interface Edge {
  source: string;
  target: string;
  /** The events (`always` for eventless) of every transition it stands for. */
  events: string[];
  /** SVG path data. */
  path: string;
  /** Where its label goes. */
  label: { x: number; y: number };
}

export interface ChartLayout {
  boxes: Box[];
  edges: Edge[];
  width: number;
  height: number;
}

const leaf = { width: 132, height: 32 };
const gap = { column: 56, row: 26, inner: 10, header: 26 };
const margin = 16;

/**
 * Positions every state and transition of the chart.
 *
 * @example
 * const { boxes, edges, width, height } = layoutChart(await (await fetch('/machine')).json());
 */
export function layoutChart(chart: MachineChart): ChartLayout {
  const top = chart.states.filter((state) => state.parent === undefined);
  const children = (id: string) => chart.states.filter((state) => state.parent === id);
  const topOf = (id: string): string => {
    const state = chart.states.find((candidate) => candidate.id === id);
    return state?.parent === undefined ? id : topOf(state.parent);
  };

  // Columns: breadth-first distance from the initial state over the top-level graph.
  const column = new Map<string, number>([[topOf(chart.initial), 0]]);
  const queue = [topOf(chart.initial)];
  while (queue.length > 0) {
    const from = queue.shift() as string;
    for (const transition of chart.transitions) {
      const [source, target] = [topOf(transition.source), topOf(transition.target)];
      if (source !== from || column.has(target)) continue;
      column.set(target, (column.get(from) ?? 0) + 1);
      queue.push(target);
    }
  }
  const last = Math.max(0, ...column.values()) + 1;
  const columnOf = (state: ChartState) =>
    state.type === 'final' ? last : (column.get(state.id) ?? last);

  const boxes: Box[] = [];
  const columns = [...new Set(top.map(columnOf))].sort((left, right) => left - right);
  columns.forEach((index, position) => {
    let y = margin;
    const x = margin + position * (leaf.width + 2 * gap.inner + gap.column);
    for (const state of top.filter((candidate) => columnOf(candidate) === index)) {
      const inner = children(state.id);
      const height =
        inner.length === 0
          ? leaf.height
          : gap.header + inner.length * (leaf.height + gap.inner) + gap.inner / 2;
      const width = inner.length === 0 ? leaf.width : leaf.width + 2 * gap.inner;
      boxes.push({ state, x: inner.length === 0 ? x + gap.inner : x, y, width, height });
      inner.forEach((child, row) => {
        const childY = y + gap.header + row * (leaf.height + gap.inner);
        boxes.push({ state: child, x: x + gap.inner, y: childY, ...leaf });
      });
      y += height + gap.row;
    }
  });

  const boxOf = new Map(boxes.map((box) => [box.state.id, box]));
  const edges: Edge[] = [];
  for (const transition of chart.transitions) {
    const from = boxOf.get(transition.source);
    const to = boxOf.get(transition.target);
    if (from === undefined || to === undefined || from === to) continue;
    const same = edges.find(
      (edge) => edge.source === transition.source && edge.target === transition.target,
    );
    if (same !== undefined) {
      if (!same.events.includes(transition.event)) same.events.push(transition.event);
      continue;
    }
    // An edge back between the same two boxes bends the other way.
    const back = edges.some(
      (edge) => edge.source === transition.target && edge.target === transition.source,
    );
    edges.push({
      source: transition.source,
      target: transition.target,
      events: [transition.event],
      ...curve(from, to, back ? 30 : 18),
    });
  }
  const width = Math.max(...boxes.map((box) => box.x + box.width)) + margin;
  const height = Math.max(...boxes.map((box) => box.y + box.height)) + margin;
  return { boxes, edges, width, height };
}

function center(box: Box) {
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
}

/** Where the line from a box's center towards a point leaves the box. */
function border(box: Box, toward: { x: number; y: number }) {
  const c = center(box);
  const dx = toward.x - c.x;
  const dy = toward.y - c.y;
  const scale = Math.min(
    dx === 0 ? Number.POSITIVE_INFINITY : box.width / 2 / Math.abs(dx),
    dy === 0 ? Number.POSITIVE_INFINITY : box.height / 2 / Math.abs(dy),
  );
  return { x: c.x + dx * Math.min(scale, 1), y: c.y + dy * Math.min(scale, 1) };
}

function curve(from: Box, to: Box, bend: number): Pick<Edge, 'path' | 'label'> {
  const [a, b] = [center(from), center(to)];
  const length = Math.hypot(b.x - a.x, b.y - a.y) || 1;
  const control = {
    x: (a.x + b.x) / 2 + (-(b.y - a.y) / length) * bend,
    y: (a.y + b.y) / 2 + ((b.x - a.x) / length) * bend,
  };
  const start = border(from, control);
  const end = border(to, control);
  const round = (value: number) => Math.round(value * 10) / 10;
  return {
    path: `M ${round(start.x)} ${round(start.y)} Q ${round(control.x)} ${round(control.y)} ${round(end.x)} ${round(end.y)}`,
    label: {
      x: round((start.x + 2 * control.x + end.x) / 4),
      y: round((start.y + 2 * control.y + end.y) / 4),
    },
  };
}
