import { hashJson, type JsonValue } from '../events/json.ts';
import type { RequestTool } from '../events/messages.ts';
import { type ToolFingerprint, toolFingerprints } from '../events/run-fingerprint.ts';
import { InvalidArgumentError } from '../runtime-errors.ts';
import { createCallSettler } from './call-settler.ts';
import { toModelToolDefinitions } from './define-tool.ts';
import { type RuntimeTools, splitTools } from './provider-tool.ts';
import type { CallSettler, PermissionPolicy } from './tool.ts';
import { readSecrets, type ToolSecrets } from './tool-output.ts';

/**
 * The `tools` of `createRuntime`: a fixed tool set, or a function the runtime reads when a run
 * starts (so a tool set that changes — an MCP server's after `tools/list_changed` — takes
 * effect for the next run, never in the middle of one).
 */
export type ToolsOption = RuntimeTools | (() => RuntimeTools);

/** What one run uses of its tool set. */
export interface RunTools {
  /** What the model is shown in every request of the run (provider tools last). */
  toolDefinitions: RequestTool[];
  /** `hashJson(toolDefinitions)`, recorded in each `step.started` as `request.toolsHash`. */
  toolsHash: string;
  /** Executes the calls of the run against exactly the tools the model was shown. */
  callSettler: CallSettler;
  /** Each tool's name and input schema hash, in the order of `toolDefinitions` (`run.started`). */
  fingerprint: ToolFingerprint[];
  /**
   * What the named tool's `secrets` gives for a call's input (`readSecrets`: fails closed);
   * a provider tool, or a name the set does not hold, has none.
   */
  secretsOf(name: string, input: JsonValue): ToolSecrets;
}

/** The tool set of each run: read once when the run is opened, then kept until it ends. */
export interface ToolSetSource {
  /** The run's tools: the ones it was opened with, or (a new run) the current set. */
  forRun(runId: string): RunTools;
  /** The run ended: its set is no longer kept. */
  release(runId: string): void;
  /** The set a run started now would get (a function is read), pinned to no run. */
  current(): RunTools;
}

/**
 * The runtime's source of tool sets. A fixed set is checked and converted once, here (bad tools
 * throw from `createRuntime`). A function is read when a run is opened (`send`, or a rebuild of
 * a run this process no longer holds, e.g. after a restart), and the run keeps that set while
 * this process holds it — parked on a permission included; a set equal to the previous one
 * (the same tools under the same names) reuses its conversion.
 *
 * @example
 * const source = createToolSetSource({ tools: () => ({ ...watch.tools, weather }) });
 * source.forRun('run_1').toolDefinitions; // what run_1 shows the model, in every step
 */
export function createToolSetSource({
  tools,
  policy,
}: {
  tools: ToolsOption | undefined;
  policy: PermissionPolicy | undefined;
}): ToolSetSource {
  const build = (set: RuntimeTools): RunTools => {
    // Provider tools are sent, never executed: only turnlog's own reach the tool runtime.
    const { own, provider } = splitTools(set);
    const toolDefinitions = [...toModelToolDefinitions(own), ...provider];
    return {
      toolDefinitions,
      toolsHash: hashJson(toolDefinitions),
      callSettler: createCallSettler({ tools: own, ...(policy ? { policy } : {}) }),
      fingerprint: toolFingerprints(toolDefinitions),
      secretsOf: (name, input) => {
        const tool = Object.hasOwn(own, name) ? own[name] : undefined;
        return tool === undefined
          ? { readable: true, secrets: [] }
          : readSecrets(() => tool.secrets(structuredClone(input)));
      },
    };
  };
  if (typeof tools !== 'function') {
    const fixed = build(tools ?? {});
    return { forRun: () => fixed, release() {}, current: () => fixed };
  }
  const pinned = new Map<string, RunTools>();
  let latest: { set: RuntimeTools; tools: RunTools } | undefined;
  const read = (): RunTools => {
    const set = tools();
    if (typeof set !== 'object' || set === null || Array.isArray(set)) {
      throw new InvalidArgumentError({
        message: `The tools function of createRuntime returned ${JSON.stringify(set) ?? typeof set}; return a record of tools, e.g. () => ({ ...watch.tools, weather }).`,
        argument: 'tools',
      });
    }
    const current = latest !== undefined && sameTools(latest.set, set) ? latest.tools : build(set);
    latest = { set: { ...set }, tools: current };
    return current;
  };
  return {
    forRun(runId) {
      const kept = pinned.get(runId);
      if (kept !== undefined) return kept;
      const current = read();
      pinned.set(runId, current);
      return current;
    },
    release(runId) {
      pinned.delete(runId);
    },
    current: read,
  };
}

/** The same tool objects under the same names, in the same order (the model sees that order). */
function sameTools(previous: RuntimeTools, next: RuntimeTools): boolean {
  const before = Object.keys(previous);
  const names = Object.keys(next);
  return (
    names.length === before.length &&
    names.every((name, index) => before[index] === name && previous[name] === next[name])
  );
}
