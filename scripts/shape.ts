// The shape of the library's source: its longest functions, any import cycle between its files
// (type imports included), and any import across its layers the wrong way. `npm run shape` prints the report; test/shape.test.ts holds the
// library to it (issue 23: no function over 120 lines outside the declarative definitions, no
// cycle).
//
// Usage: node scripts/shape.ts [maxLines] [--json]
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseSync } from 'oxc-parser';

/** One function, method or constructor of the source, with its length in lines. */
export interface FunctionShape {
  file: string;
  name: string;
  /** The line it starts on (1-based). */
  line: number;
  lines: number;
}

export interface SourceShape {
  files: number;
  lines: number;
  /** Every function, longest first. */
  functions: FunctionShape[];
  /** Functions longer than the limit, not counting the declarative definitions. */
  over: FunctionShape[];
  /** Each strongly connected set of files (more than one) in the import graph, type imports included. */
  cycles: string[][];
  /** Imports that cross the layers the wrong way (see `layers`), type imports included. */
  crossings: string[];
}

/**
 * The layers (architecture/README.md): a file may import its own layer and the ones listed for
 * it, nothing above. The first rule whose prefix a path starts with is its layer; the root files
 * that wire everything (runtime.ts, runtime-settings.ts, index.ts, errors.ts) and the HTTP surfaces (`http/`) are not
 * listed: they are the top and may import anything; nothing listed may import them.
 */
export const layers: { layer: string; prefixes: string[]; may: string[] }[] = [
  // The vocabulary: the facts, their projections, and the errors every layer throws.
  { layer: 'events', prefixes: ['events/', 'runtime-errors.ts'], may: [] },
  { layer: 'store', prefixes: ['store/'], may: ['events'] },
  { layer: 'tools', prefixes: ['tools/'], may: ['events'] },
  // The UI message stream reads a run's turn events: it sits above the machine it follows.
  { layer: 'ui', prefixes: ['adapters/ui/'], may: ['events', 'model', 'machines'] },
  { layer: 'model', prefixes: ['adapters/'], may: ['events'] },
  // Traces and metrics of runs, derived from their facts: below the machines that feed them.
  { layer: 'observability', prefixes: ['observability/'], may: ['events', 'store', 'tools'] },
  {
    layer: 'machines',
    prefixes: ['machines/', 'runtime-arguments.ts'],
    may: ['events', 'store', 'tools', 'model', 'observability'],
  },
];

function layerOf(file: string) {
  return layers.find((rule) => rule.prefixes.some((prefix) => file.startsWith(prefix)));
}

/** Every import from a lower layer to a higher one, as `from → to`. */
function crossingsOf(graph: Map<string, string[]>): string[] {
  const crossings: string[] = [];
  for (const [file, imported] of graph) {
    const from = layerOf(file);
    if (from === undefined) continue;
    for (const target of imported) {
      const to = layerOf(target);
      // Unlisted root files (runtime.ts, index.ts, errors.ts) are the top: no layer imports them.
      if (to !== undefined && (to === from || from.may.includes(to.layer))) continue;
      crossings.push(`${file} (${from.layer}) → ${target} (${to?.layer ?? 'top'})`);
    }
  }
  return crossings.sort();
}

/**
 * Declarative definitions a reader takes in at a glance, however long: a table, not logic
 * (issue 23 names them). Each is `file:function`.
 */
export const declarative = new Set(['events/fact-schemas.ts:defineFactSchemas']);

/** The library's own source: what is published, not its tests, benchmarks, examples or scripts. */
export function sourceFiles(root: string): string[] {
  const listed = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
    cwd: root,
    encoding: 'utf8',
  });
  return listed
    .split('\n')
    .filter((file) => /\.(ts|tsx|cts|mts)$/.test(file))
    .filter((file) => !/^(test|bench|examples|scripts|docs)\//.test(file))
    .filter((file) => !/\.d\.ts$/.test(file) && file !== 'vitest.config.ts');
}

interface Node {
  type: string;
  start: number;
  end: number;
  [key: string]: unknown;
}

const functionTypes = new Set([
  'FunctionDeclaration',
  'FunctionExpression',
  'ArrowFunctionExpression',
]);

/** The name a reader would search for: the declaration's, or the binding or key it is assigned to. */
function nameOf(node: Node, parent: Node | undefined, grandparent: Node | undefined): string {
  const id = node.id as Node | null | undefined;
  if (id && typeof id.name === 'string') return id.name;
  // A method's function expression: name it after the method (and its class, when there is one).
  const holder =
    parent?.type === 'MethodDefinition' || parent?.type === 'Property' ? parent : undefined;
  if (holder !== undefined) {
    const key = holder.key as Node;
    const name =
      typeof key.name === 'string'
        ? key.name
        : typeof key.value === 'string'
          ? key.value
          : '(computed)';
    return holder.kind === 'constructor' ? `constructor` : name;
  }
  if (parent?.type === 'VariableDeclarator') {
    const binding = parent.id as Node;
    if (typeof binding.name === 'string') return binding.name;
  }
  if (parent?.type === 'PropertyDefinition') {
    const key = parent.key as Node;
    if (typeof key.name === 'string') return key.name;
  }
  if (parent?.type === 'CallExpression' && grandparent?.type === 'VariableDeclarator') {
    const binding = grandparent.id as Node;
    if (typeof binding.name === 'string') return `${binding.name} (callback)`;
  }
  return '(anonymous)';
}

/** Line starts of a text, for offsets → line numbers. */
function lineStarts(text: string): number[] {
  const starts = [0];
  for (let index = 0; index < text.length; index += 1) {
    if (text.charCodeAt(index) === 10) starts.push(index + 1);
  }
  return starts;
}

function lineAt(starts: number[], offset: number): number {
  let low = 0;
  let high = starts.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if ((starts[middle] as number) <= offset) low = middle;
    else high = middle - 1;
  }
  return low + 1;
}

/** Every function in one file's syntax tree. */
function functionsOf(file: string, program: Node, text: string): FunctionShape[] {
  const starts = lineStarts(text);
  const found: FunctionShape[] = [];
  const visit = (node: Node, parent: Node | undefined, grandparent: Node | undefined) => {
    if (functionTypes.has(node.type)) {
      const first = lineAt(starts, node.start);
      found.push({
        file,
        name: nameOf(node, parent, grandparent),
        line: first,
        lines: lineAt(starts, node.end) - first + 1,
      });
    }
    for (const value of Object.values(node)) {
      if (Array.isArray(value)) {
        for (const child of value) if (isNode(child)) visit(child, node, parent);
      } else if (isNode(value)) visit(value, node, parent);
    }
  };
  visit(program, undefined, undefined);
  return found;
}

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && typeof (value as Node).type === 'string';
}

/** The files one file imports or re-exports (relative specifiers), type-only ones included. */
function importsOf(file: string, module: ReturnType<typeof parseSync>['module']): string[] {
  const specifiers = [
    ...module.staticImports.map((entry) => entry.moduleRequest.value),
    ...module.staticExports.flatMap((entry) =>
      entry.entries.flatMap((exported) =>
        exported.moduleRequest ? [exported.moduleRequest.value] : [],
      ),
    ),
  ];
  return specifiers
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => path.normalize(path.join(path.dirname(file), specifier)));
}

/** Tarjan's strongly connected components: each set of files that import each other in a circle. */
function cyclesOf(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const strong = (file: string) => {
    index.set(file, counter);
    low.set(file, counter);
    counter += 1;
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) {
        strong(next);
        low.set(file, Math.min(low.get(file) as number, low.get(next) as number));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file) as number, index.get(next) as number));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1) cycles.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) strong(file);
  return cycles;
}

/** Measures the source under `root`: every function's length and the import cycles. */
export function measureShape(root: string, maxLines: number): SourceShape {
  const files = sourceFiles(root);
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  const functions: FunctionShape[] = [];
  let lines = 0;
  for (const file of files) {
    const text = readFileSync(path.join(root, file), 'utf8');
    lines += text.split('\n').length;
    const parsed = parseSync(file, text, { lang: file.endsWith('x') ? 'tsx' : 'ts' });
    if (parsed.errors.length > 0) {
      throw new Error(`shape: ${file} does not parse: ${parsed.errors[0]?.message}`);
    }
    functions.push(...functionsOf(file, parsed.program as unknown as Node, text));
    graph.set(
      file,
      importsOf(file, parsed.module).filter((imported) => known.has(imported)),
    );
  }
  functions.sort((a, b) => b.lines - a.lines);
  const over = functions.filter(
    (shape) => shape.lines > maxLines && !declarative.has(`${shape.file}:${shape.name}`),
  );
  return {
    files: files.length,
    lines,
    functions,
    over,
    cycles: cyclesOf(graph),
    crossings: crossingsOf(graph),
  };
}

function report(shape: SourceShape, maxLines: number): string {
  const out = [
    `${shape.files} source files, ${shape.lines} lines.`,
    `Functions longer than ${maxLines} lines (declarative definitions aside): ${shape.over.length}`,
    ...shape.over.map((entry) => `  ${entry.file}:${entry.line} ${entry.name} ${entry.lines}`),
    'Longest ten:',
    ...shape.functions
      .slice(0, 10)
      .map((entry) => `  ${entry.file}:${entry.line} ${entry.name} ${entry.lines}`),
    `Import cycles (type imports included): ${shape.cycles.length}`,
    ...shape.cycles.map((cycle) => `  ${cycle.join(' ↔ ')}`),
    `Imports across the layers the wrong way: ${shape.crossings.length}`,
    ...shape.crossings.map((crossing) => `  ${crossing}`),
  ];
  return out.join('\n');
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const maxLines = Number(args.find((arg) => /^\d+$/.test(arg)) ?? 120);
  const shape = measureShape(process.cwd(), maxLines);
  if (args.includes('--json')) {
    const { functions, ...rest } = shape;
    console.log(JSON.stringify({ ...rest, longest: functions.slice(0, 10) }, null, 2));
  } else {
    console.log(report(shape, maxLines));
  }
  const clean = shape.over.length + shape.cycles.length + shape.crossings.length === 0;
  process.exitCode = clean ? 0 : 1;
}
