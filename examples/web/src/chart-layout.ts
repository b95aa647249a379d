// Lays out a machine chart (examples/web/server/machine-chart.ts) for an SVG drawing: top-level
// states in columns by their distance from the initial state (final states last), compound
// states as boxes holding their children. Pure: the same chart always gives the same picture.
//
// Transitions are drawn orthogonally in the empty bands between columns (channels) and in
// lanes above and below the boxes, never through a box. Arrows share lines as a bus does:
//   - every arrow leaving a state starts at one point on its right side and runs into that
//     state's own vertical line (its exit bus) in the channel right of its column;
//   - from there, into the next column or within its own, along to the target's height and in
//     (a target in its own column is entered from the right);
//   - further forward or back: up to the target's lane above the boxes (forward) or down to its
//     lane below (back), along it to the target's entry bus in the channel left of the target's
//     column, and in.
// Arrows into one side of a state meet at one point, under one arrowhead.
import type { ChartState, MachineChart } from '../server/machine-chart.ts';

/** A state's box. */
export interface Box {
  state: ChartState;
  x: number;
  y: number;
  width: number;
  height: number;
}

/** The transitions from one state to another, as one arrow from box side to box side. */
export interface Edge {
  source: string;
  target: string;
  /** The events (`always` for eventless) of every transition it stands for. */
  events: string[];
  /** SVG path data. */
  path: string;
  /**
   * Where its label starts: just above the target's box, where its arrowheads are (a label
   * along the arrow would cover the boxes the arrow runs between).
   */
  label: { x: number; y: number };
}

export interface ChartLayout {
  boxes: Box[];
  edges: Edge[];
  width: number;
  height: number;
}

const leaf = { width: 132, height: 32 };
const gap = { row: 26, inner: 10, header: 26 };
/** Between parallel runs: slots in a channel, lanes above and below. */
const spacing = 8;
const margin = 16;
const columnWidth = leaf.width + 2 * gap.inner;

/** A transition between two boxes, before it has coordinates. */
interface Route {
  source: string;
  target: string;
  events: string[];
  kind: 'next' | 'same' | 'over' | 'back';
}

/**
 * Positions every state and transition of the chart.
 *
 * @example
 * const { boxes, edges, width, height } = layoutChart(await (await fetch('/machine')).json());
 */
export function layoutChart(chart: MachineChart): ChartLayout {
  const { boxes, columnOf } = placeBoxes(chart);
  const boxOf = new Map(boxes.map((box) => [box.state.id, box]));
  const routes = routesOf(chart, boxOf, columnOf);
  // Lanes: one per target of arrows over columns (above) and back (below).
  const lanes = { over: [] as string[], back: [] as string[] };
  for (const route of routes) {
    if (route.kind !== 'over' && route.kind !== 'back') continue;
    if (!lanes[route.kind].includes(route.target)) lanes[route.kind].push(route.target);
  }
  // Channels: k is the band left of column k. Its buses: the exits of column k - 1's states,
  // then the entries of column k's states that lanes reach.
  const columns = Math.max(0, ...boxes.map((box) => columnOf(box.state.id))) + 1;
  const buses = Array.from({ length: columns + 1 }, () => [] as string[]);
  const bus = (channel: number, name: string) => {
    const list = buses[channel] ?? [];
    if (!list.includes(name)) list.push(name);
    buses[channel] = list;
  };
  for (const route of routes) {
    bus(columnOf(route.source) + 1, `exit:${route.source}`);
    if (route.kind === 'over' || route.kind === 'back') {
      bus(columnOf(route.target), `entry:${route.target}`);
    }
  }
  const channelWidth = buses.map((list) => (Math.max(1, list.length) + 1) * spacing);
  const columnX = (column: number) =>
    margin +
    channelWidth.slice(0, column + 1).reduce((sum, width) => sum + width, 0) +
    column * columnWidth;
  const busX = (channel: number, name: string) =>
    columnX(channel) -
    ((channelWidth[channel] ?? 0) - ((buses[channel] ?? []).indexOf(name) + 1) * spacing);
  const top = margin + (lanes.over.length + 1) * spacing;
  for (const box of boxes) {
    box.x += columnX(columnOf(box.state.id));
    box.y += top;
  }
  const bottom = Math.max(...boxes.map((box) => box.y + box.height)) + spacing;
  const laneY = (route: Route) =>
    route.kind === 'over'
      ? margin + (lanes.over.length - lanes.over.indexOf(route.target)) * spacing
      : bottom + (lanes.back.indexOf(route.target) + 1) * spacing;

  const ports = sidePorts(routes, boxOf);
  const edges = routes.map((route): Edge => {
    const from = boxOf.get(route.source) as Box;
    const to = boxOf.get(route.target) as Box;
    const exitX = busX(columnOf(route.source) + 1, `exit:${route.source}`);
    const start = { x: from.x + from.width, y: ports.out(route.source) };
    const right = route.kind === 'same';
    const end = { x: right ? to.x + to.width : to.x, y: ports.in(route.target, right) };
    const points: Point[] =
      route.kind === 'next' || route.kind === 'same'
        ? [start, { x: exitX, y: start.y }, { x: exitX, y: end.y }, end]
        : [
            start,
            { x: exitX, y: start.y },
            { x: exitX, y: laneY(route) },
            { x: busX(columnOf(route.target), `entry:${route.target}`), y: laneY(route) },
            { x: busX(columnOf(route.target), `entry:${route.target}`), y: end.y },
            end,
          ];
    return {
      source: route.source,
      target: route.target,
      events: route.events,
      path: roundedPath(points),
      label: { x: round(to.x + 2), y: round(to.y - 4) },
    };
  });
  const width =
    Math.max(...boxes.map((box) => box.x + box.width + (channelWidth[columns] ?? 0))) + margin;
  const height = bottom + (lanes.back.length + 1) * spacing + margin;
  return { boxes, edges, width, height };
}

/**
 * The boxes, each at its place inside its column (x from the column's left, y from the top),
 * and the column of every state (its top-level state's).
 */
function placeBoxes(chart: MachineChart) {
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
  const topColumn = (state: ChartState) =>
    state.type === 'final' ? last : (column.get(state.id) ?? last);
  // Renumbered without gaps: 0, 1, 2, … in order.
  const order = [...new Set(top.map(topColumn))].sort((left, right) => left - right);
  const columnOfTop = new Map(top.map((state) => [state.id, order.indexOf(topColumn(state))]));
  const columnOf = (id: string) => columnOfTop.get(topOf(id)) ?? 0;

  const boxes: Box[] = [];
  order.forEach((_, index) => {
    let y = 0;
    for (const state of top.filter((candidate) => columnOf(candidate.id) === index)) {
      const inner = children(state.id);
      const height =
        inner.length === 0
          ? leaf.height
          : gap.header + inner.length * (leaf.height + gap.inner) + gap.inner / 2;
      const width = inner.length === 0 ? leaf.width : columnWidth;
      boxes.push({ state, x: inner.length === 0 ? gap.inner : 0, y, width, height });
      inner.forEach((child, row) => {
        const childY = y + gap.header + row * (leaf.height + gap.inner);
        boxes.push({ state: child, x: gap.inner, y: childY, ...leaf });
      });
      y += height + gap.row;
    }
  });
  return { boxes, columnOf };
}

/** One route per pair of boxes a transition joins (transitions between the same two merged). */
function routesOf(
  chart: MachineChart,
  boxOf: Map<string, Box>,
  columnOf: (id: string) => number,
): Route[] {
  const routes: Route[] = [];
  for (const transition of chart.transitions) {
    const { source, target, event } = transition;
    if (!boxOf.has(source) || !boxOf.has(target) || source === target) continue;
    const same = routes.find((route) => route.source === source && route.target === target);
    if (same !== undefined) {
      if (!same.events.includes(event)) same.events.push(event);
      continue;
    }
    const step = columnOf(target) - columnOf(source);
    const kind = step === 1 ? 'next' : step === 0 ? 'same' : step > 1 ? 'over' : 'back';
    routes.push({ source, target, events: [event], kind });
  }
  return routes;
}

/**
 * Where arrows meet their boxes: every arrow leaving a state at one point of its right side,
 * every arrow into one side of a state at one point of that side (below a compound state's
 * title; on a right side that arrows also leave, the way in is below the way out).
 */
function sidePorts(routes: Route[], boxOf: Map<string, Box>) {
  const entersRight = new Set(
    routes.filter((route) => route.kind === 'same').map((route) => route.target),
  );
  const leaves = new Set(routes.map((route) => route.source));
  const at = (id: string, share: number) => {
    const box = boxOf.get(id) as Box;
    const head = box.state.type === 'compound' ? gap.header : 0;
    return round(box.y + head + (box.height - head) * share);
  };
  return {
    out: (id: string) => at(id, entersRight.has(id) ? 1 / 3 : 1 / 2),
    in: (id: string, right: boolean) => at(id, right && leaves.has(id) ? 2 / 3 : 1 / 2),
  };
}

interface Point {
  x: number;
  y: number;
}

/** A polyline through `points` with its corners rounded. */
function roundedPath(points: Point[]): string {
  const radius = 4;
  const first = points[0] as Point;
  let path = `M ${round(first.x)} ${round(first.y)}`;
  for (let index = 1; index < points.length - 1; index += 1) {
    const before = points[index - 1] as Point;
    const corner = points[index] as Point;
    const after = points[index + 1] as Point;
    const toward = (from: Point, to: Point): Point => {
      const length = Math.hypot(to.x - from.x, to.y - from.y);
      const cut = Math.min(radius, length / 2);
      return length === 0
        ? from
        : {
            x: from.x + ((to.x - from.x) / length) * cut,
            y: from.y + ((to.y - from.y) / length) * cut,
          };
    };
    const [entering, leaving] = [toward(corner, before), toward(corner, after)];
    path += ` L ${round(entering.x)} ${round(entering.y)} Q ${round(corner.x)} ${round(corner.y)} ${round(leaving.x)} ${round(leaving.y)}`;
  }
  const last = points.at(-1) as Point;
  return `${path} L ${round(last.x)} ${round(last.y)}`;
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}
