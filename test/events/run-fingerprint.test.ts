import { describe, expect, it } from 'vitest';
import type { FactOf } from '../../events/facts.ts';
import { hashJson, hashText } from '../../events/json.ts';
import {
  compareFingerprints,
  type RunFingerprint,
  recordedFingerprint,
  toolFingerprints,
} from '../../events/run-fingerprint.ts';
import { loadSampleLog } from './sample-logs.ts';

const schema = (property: string) => ({
  type: 'object',
  properties: { [property]: { type: 'string' } },
});

const current: RunFingerprint = {
  turnlogVersion: '0.1.0',
  machineVersion: '1',
  model: { provider: 'openai.responses', modelId: 'gpt-5' },
  tools: toolFingerprints([
    { name: 'readFile', description: 'Reads a file.', inputSchema: schema('path') },
    { type: 'provider', name: 'webSearch', id: 'openai.web_search', args: {} },
  ]),
  systemHash: hashText('Be brief.'),
};

describe('toolFingerprints', () => {
  it('hashes each tool’s input schema (a provider tool’s id and arguments), in the given order, descriptions aside', () => {
    expect(current.tools).toStrictEqual([
      { name: 'readFile', inputSchemaHash: hashJson(schema('path')) },
      { name: 'webSearch', inputSchemaHash: hashJson({ id: 'openai.web_search', args: {} }) },
    ]);
    expect(
      toolFingerprints([
        { name: 'readFile', description: 'Another text.', inputSchema: schema('path') },
      ]),
    ).toStrictEqual([current.tools?.[0]]);
  });
});

describe('compareFingerprints', () => {
  it('finds nothing between equal fingerprints', () => {
    expect(compareFingerprints(current, structuredClone(current))).toStrictEqual([]);
  });

  it('names every tool removed, added or changed, the model, the prompt and the versions', () => {
    const recorded: RunFingerprint = {
      turnlogVersion: '0.0.9',
      machineVersion: undefined,
      model: { provider: 'openai.responses', modelId: 'gpt-4.1' },
      tools: toolFingerprints([
        { name: 'readFile', description: 'Reads a file.', inputSchema: schema('file') },
        { name: 'deleteFile', description: 'Deletes a file.', inputSchema: schema('path') },
      ]),
      systemHash: undefined,
    };
    expect(
      compareFingerprints(recorded, current).map((difference) => difference.message),
    ).toStrictEqual([
      'turnlog: started with 0.0.9, now 0.1.0',
      'turn machine: started with version (not recorded), now 1',
      'model: started with openai.responses:gpt-4.1, now openai.responses:gpt-5',
      `tool readFile: its input schema changed (${hashJson(schema('file'))} → ${hashJson(schema('path'))})`,
      'tool deleteFile: removed (the run was started with it; a pending call of it cannot run)',
      'tool webSearch: added',
      `system prompt: changed (none → ${hashText('Be brief.')})`,
    ]);
    expect(
      compareFingerprints(recorded, current).map((difference) => difference.kind),
    ).toStrictEqual([
      'turnlog-version-changed',
      'machine-version-changed',
      'model-changed',
      'tool-changed',
      'tool-removed',
      'tool-added',
      'system-changed',
    ]);
  });

  it('names tools shown in another order', () => {
    const reordered = { ...current, tools: [...(current.tools ?? [])].reverse() };
    expect(compareFingerprints(reordered, current)).toStrictEqual([
      {
        kind: 'tools-reordered',
        recorded: ['webSearch', 'readFile'],
        current: ['readFile', 'webSearch'],
        message: 'tools: shown in another order (webSearch, readFile → readFile, webSearch)',
      },
    ]);
  });
});

describe('recordedFingerprint', () => {
  it('reads a log written before fingerprints: tools and model not recorded, the prompt hashed from run.started', () => {
    const started = loadSampleLog('permission')[0] as FactOf<'run.started'>;
    const recorded = recordedFingerprint(started);
    expect(recorded).toStrictEqual({
      turnlogVersion: started.runtimeVersion,
      machineVersion: undefined,
      model: undefined,
      tools: undefined,
      systemHash: started.system === undefined ? undefined : hashText(started.system),
    });
    expect(
      compareFingerprints(recorded, {
        ...current,
        systemHash: recorded.systemHash,
        machineVersion: undefined,
      }),
    ).toStrictEqual([
      {
        kind: 'not-recorded',
        what: 'model',
        message: 'model: not recorded (the run began before fingerprints were recorded)',
      },
      {
        kind: 'not-recorded',
        what: 'tools',
        message: 'tools: not recorded (the run began before fingerprints were recorded)',
      },
    ]);
  });
});
