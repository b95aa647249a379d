import type { FactOf, RecordedFingerprint } from './facts.ts';
import { hashJson, hashText } from './json.ts';
import type { RequestTool } from './messages.ts';

/**
 * What a run was run with: turnlog's and the turn machine's versions, the model, the tools (each
 * name with the hash of its input schema) and the hash of the system prompt. `run.started` records
 * it (`recordedFingerprint` reads it back); `runtime.fingerprint()` gives the current runtime's;
 * `compareFingerprints` names what differs, so a deploy can tell which parked runs the new code
 * would continue with other tools, another model or another prompt.
 */
export interface RunFingerprint {
  /** turnlog's version (`run.started.runtimeVersion`). */
  turnlogVersion: string;
  /** The turn machine's version; `undefined` for a run begun before versions were recorded. */
  machineVersion: string | undefined;
  /** The model's provider and id; `undefined` for a run begun before fingerprints were recorded. */
  model: { provider: string; modelId: string } | undefined;
  /** The tools in the order the model is shown them; `undefined` when not recorded. */
  tools: ToolFingerprint[] | undefined;
  /** `hashText` of the system prompt; `undefined` when the run has none. */
  systemHash: string | undefined;
}

/** One tool of a fingerprint: its name and the hash of what the model is told its input is. */
export interface ToolFingerprint {
  name: string;
  /** `hashJson` of the tool's input JSON Schema; for a provider tool, of its id and arguments. */
  inputSchemaHash: string;
}

/** One way a recorded fingerprint differs from the current one, with a sentence saying so. */
export type FingerprintDifference = { message: string } & (
  | { kind: 'tool-removed' | 'tool-added'; name: string }
  | { kind: 'tool-changed'; name: string; recorded: string; current: string }
  | { kind: 'tools-reordered'; recorded: string[]; current: string[] }
  | { kind: 'model-changed'; recorded: string; current: string }
  | { kind: 'system-changed'; recorded: string | undefined; current: string | undefined }
  | { kind: 'turnlog-version-changed'; recorded: string; current: string }
  | { kind: 'machine-version-changed'; recorded: string | undefined; current: string | undefined }
  /** The run was begun before fingerprints were recorded: its tools and model are not known. */
  | { kind: 'not-recorded'; what: 'tools' | 'model' }
);

/** The fingerprint of each tool a request carries, in the same order. */
export function toolFingerprints(definitions: readonly RequestTool[]): ToolFingerprint[] {
  return definitions.map((tool) => ({
    name: tool.name,
    inputSchemaHash: hashJson(
      tool.type === 'provider' ? { id: tool.id, args: tool.args } : tool.inputSchema,
    ),
  }));
}

/** The fingerprint `run.started` records: the tools, the model and the system prompt's hash. */
export function fingerprintToRecord(options: {
  tools: ToolFingerprint[];
  provider: string;
  modelId: string;
  system: string | undefined;
}): RecordedFingerprint {
  const { tools, provider, modelId, system } = options;
  return {
    tools,
    provider,
    modelId,
    ...(system === undefined ? {} : { systemHash: hashText(system) }),
  };
}

/**
 * The fingerprint a run was started with, read from its `run.started`. A run begun before
 * fingerprints were recorded has no tools or model in it (`undefined`); its system prompt's hash
 * is computed from the prompt, which every `run.started` holds.
 */
export function recordedFingerprint(runStarted: FactOf<'run.started'>): RunFingerprint {
  const { fingerprint, system } = runStarted;
  return {
    turnlogVersion: runStarted.runtimeVersion,
    machineVersion: runStarted.machineVersion,
    model:
      fingerprint === undefined
        ? undefined
        : { provider: fingerprint.provider, modelId: fingerprint.modelId },
    tools: fingerprint?.tools,
    systemHash: fingerprint?.systemHash ?? (system === undefined ? undefined : hashText(system)),
  };
}

/**
 * Names what differs between the fingerprint a run was started with and the current one:
 * tools removed, added or with another input schema (or shown in another order), another model,
 * another system prompt, another turnlog or turn machine version. An empty list: the run would be
 * continued with what it was started with.
 *
 * @example
 * const facts = await runtime.facts(sessionId);
 * const started = facts.findLast((fact) => fact.type === 'run.started');
 * for (const difference of compareFingerprints(recordedFingerprint(started), runtime.fingerprint()))
 *   console.log(difference.message); // e.g. "tool sendInvoice: its input schema changed (…)"
 */
export function compareFingerprints(
  recorded: RunFingerprint,
  current: RunFingerprint,
): FingerprintDifference[] {
  return [
    ...versionDifferences(recorded, current),
    ...modelDifferences(recorded.model, current.model),
    ...toolDifferences(recorded.tools, current.tools),
    ...systemDifferences(recorded.systemHash, current.systemHash),
  ];
}

function versionDifferences(
  recorded: RunFingerprint,
  current: RunFingerprint,
): FingerprintDifference[] {
  const differences: FingerprintDifference[] = [];
  if (recorded.turnlogVersion !== current.turnlogVersion) {
    differences.push({
      kind: 'turnlog-version-changed',
      recorded: recorded.turnlogVersion,
      current: current.turnlogVersion,
      message: `turnlog: started with ${recorded.turnlogVersion}, now ${current.turnlogVersion}`,
    });
  }
  if (recorded.machineVersion !== current.machineVersion) {
    differences.push({
      kind: 'machine-version-changed',
      recorded: recorded.machineVersion,
      current: current.machineVersion,
      message: `turn machine: started with version ${recorded.machineVersion ?? '(not recorded)'}, now ${current.machineVersion ?? '(not recorded)'}`,
    });
  }
  return differences;
}

function modelDifferences(
  recorded: RunFingerprint['model'],
  current: RunFingerprint['model'],
): FingerprintDifference[] {
  if (recorded === undefined) {
    return [
      {
        kind: 'not-recorded',
        what: 'model',
        message: 'model: not recorded (the run began before fingerprints were recorded)',
      },
    ];
  }
  const name = (model: { provider: string; modelId: string }) =>
    `${model.provider}:${model.modelId}`;
  if (current === undefined || name(recorded) === name(current)) return [];
  return [
    {
      kind: 'model-changed',
      recorded: name(recorded),
      current: name(current),
      message: `model: started with ${name(recorded)}, now ${name(current)}`,
    },
  ];
}

function toolDifferences(
  recorded: ToolFingerprint[] | undefined,
  current: ToolFingerprint[] | undefined,
): FingerprintDifference[] {
  if (recorded === undefined) {
    return [
      {
        kind: 'not-recorded',
        what: 'tools',
        message: 'tools: not recorded (the run began before fingerprints were recorded)',
      },
    ];
  }
  if (current === undefined) return [];
  const now = new Map(current.map((tool) => [tool.name, tool.inputSchemaHash]));
  const before = new Map(recorded.map((tool) => [tool.name, tool.inputSchemaHash]));
  const differences: FingerprintDifference[] = [];
  for (const { name, inputSchemaHash } of recorded) {
    const hash = now.get(name);
    if (hash === undefined) {
      differences.push({
        kind: 'tool-removed',
        name,
        message: `tool ${name}: removed (the run was started with it; a pending call of it cannot run)`,
      });
    } else if (hash !== inputSchemaHash) {
      differences.push({
        kind: 'tool-changed',
        name,
        recorded: inputSchemaHash,
        current: hash,
        message: `tool ${name}: its input schema changed (${inputSchemaHash} → ${hash})`,
      });
    }
  }
  for (const { name } of current) {
    if (!before.has(name)) {
      differences.push({ kind: 'tool-added', name, message: `tool ${name}: added` });
    }
  }
  const shared = (tools: ToolFingerprint[], other: Map<string, string>) =>
    tools.map((tool) => tool.name).filter((name) => other.has(name));
  const [order, orderNow] = [shared(recorded, now), shared(current, before)];
  if (order.join('\n') !== orderNow.join('\n')) {
    differences.push({
      kind: 'tools-reordered',
      recorded: order,
      current: orderNow,
      message: `tools: shown in another order (${order.join(', ')} → ${orderNow.join(', ')})`,
    });
  }
  return differences;
}

function systemDifferences(
  recorded: string | undefined,
  current: string | undefined,
): FingerprintDifference[] {
  if (recorded === current) return [];
  const shown = (hash: string | undefined) => hash ?? 'none';
  return [
    {
      kind: 'system-changed',
      recorded,
      current,
      message: `system prompt: changed (${shown(recorded)} → ${shown(current)})`,
    },
  ];
}
