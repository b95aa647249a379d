import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { experimental_streamLanguageModelCall as streamLanguageModelCall, streamText } from 'ai';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { aiSdkAdapter } from '../../adapters/ai-sdk-adapter.ts';
import type { ModelStepRequest } from '../../adapters/model-adapter.ts';
import { scriptedModel } from '../../adapters/scripted-model.ts';

vi.mock('ai', async (importOriginal) => {
  const actual = await importOriginal<typeof import('ai')>();
  return {
    ...actual,
    streamText: vi.fn(actual.streamText),
    experimental_streamLanguageModelCall: vi.fn(actual.experimental_streamLanguageModelCall),
  };
});

const root = fileURLToPath(new URL('../..', import.meta.url));
/** The source files under `path` (a file or a folder), node_modules left out. */
function sourceFiles(path: string): string[] {
  let stats: ReturnType<typeof statSync>;
  try {
    stats = statSync(path);
  } catch {
    return []; // a folder that does not exist yet holds no imports
  }
  if (stats.isFile()) return /\.(ts|mts|js|mjs)$/.test(path) ? [path] : [];
  return readdirSync(path).flatMap((entry) =>
    entry === 'node_modules' ? [] : sourceFiles(join(path, entry)),
  );
}

const tools: ModelStepRequest['tools'] = ['readFile', 'writeFile'].map((name) => ({
  name,
  description: `the ${name} tool`,
  inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
}));

describe('the adapter boundary (I4)', () => {
  beforeEach(() => {
    vi.mocked(streamText).mockClear();
    vi.mocked(streamLanguageModelCall).mockClear();
  });

  it('makes exactly one doStream call per step, even when the step ends with tool-calls', async () => {
    const model = scriptedModel([
      { toolCalls: [{ name: 'readFile', input: { path: 'a.md' } }] },
      { toolCalls: [{ name: 'writeFile', input: { path: 'b.md' } }], finishReason: 'tool-calls' },
    ]);
    const doStream = vi.spyOn(model, 'doStream');
    const doGenerate = vi.spyOn(model, 'doGenerate');
    const adapter = aiSdkAdapter(model);
    const abortSignal = new AbortController().signal;
    const first = await adapter.step({
      messages: [{ role: 'user', content: 'go' }],
      tools,
      abortSignal,
    }).completion;
    expect(first).toMatchObject({
      type: 'step.completed',
      finishReason: { unified: 'tool-calls' },
    });
    expect(doStream).toHaveBeenCalledTimes(1);
    await adapter.step({ messages: [{ role: 'user', content: 'go' }], tools, abortSignal })
      .completion;
    expect(doStream).toHaveBeenCalledTimes(2);
    expect(doGenerate).not.toHaveBeenCalled();
    expect(model.requests).toHaveLength(2);
  });

  it('makes one model call without streamText: the active tools as schemas only, no loop, no retries', async () => {
    const model = scriptedModel([{ text: 'ok' }]);
    const abortSignal = new AbortController().signal;
    await aiSdkAdapter(model).step({
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'go' }],
      tools,
      activeTools: ['readFile'],
      maxOutputTokens: 256,
      providerOptions: { openai: { store: false } },
      abortSignal,
    }).completion;
    // streamText would loop over steps and retry; the adapter calls the model's doStream once,
    // with the prompt the SDK's converter builds (test/adapters/language-model-prompt.test.ts).
    expect(streamText).toHaveBeenCalledTimes(0);
    expect(streamLanguageModelCall).toHaveBeenCalledTimes(0);
    expect(model.requests).toHaveLength(1);
    expect(model.requests[0]?.prompt).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'go' }] },
    ]);
    const sent = model.requests[0];
    expect(sent?.tools).toEqual([
      {
        type: 'function',
        name: 'readFile',
        description: 'the readFile tool',
        inputSchema: {
          type: 'object',
          properties: { path: { type: 'string' } },
          required: ['path'],
        },
      },
    ]);
    expect(sent?.maxOutputTokens).toBe(256);
    expect(sent?.providerOptions).toEqual({ openai: { store: false } });
  });

  it('makes one doStream call for a step whose provider fails: nothing retries it (I4, I9)', async () => {
    const model = scriptedModel([
      { error: { status: 503, message: 'overloaded' } },
      { text: 'ok' },
    ]);
    const completion = await aiSdkAdapter(model).step({
      messages: [{ role: 'user', content: 'go' }],
      tools,
      abortSignal: new AbortController().signal,
    }).completion;
    expect(completion).toMatchObject({ type: 'step.failed', error: { status: 503 } });
    expect(model.requests).toHaveLength(1);
  });
});

describe('imports of the AI SDK', () => {
  // The library's own source. Examples are user code: they import @ai-sdk/openai to build a model.
  // Every source folder and root file but adapters/ (the only one that may import the SDK) and
  // what is not the library (tests, benches, examples, scripts, generated output).
  const notScanned = new Set([
    'adapters',
    'test',
    'bench',
    'examples',
    'scripts',
    'node_modules',
    'dist',
    'docs',
    'test-output',
    'coverage',
  ]);
  const scanned = readdirSync(root).filter(
    (entry) => !entry.startsWith('.') && !notScanned.has(entry),
  );

  function sdkImports(source: string): string[] {
    const pattern =
      /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)['"]((?:ai|@ai-sdk\/[^'"]+)(?:\/[^'"]*)?)['"]/g;
    return [...source.matchAll(pattern)].map((match) => match[1] as string);
  }

  it('finds the imports it is looking for', () => {
    expect(
      sdkImports(
        "import { experimental_streamLanguageModelCall as streamLanguageModelCall, streamText } from 'ai';\nimport type { X } from \"@ai-sdk/provider\";\nconst m = await import('@ai-sdk/openai');\nimport 'ai/test';\nimport { a } from 'aim';",
      ),
    ).toEqual(['ai', '@ai-sdk/provider', '@ai-sdk/openai', 'ai/test']);
  });

  it('finds no file outside adapters/ that imports ai or @ai-sdk/*', () => {
    const files = scanned.flatMap((path) => sourceFiles(join(root, path)));
    expect(files).toContain(join(root, 'events', 'facts.ts'));
    const offenders = files.flatMap((file) =>
      sdkImports(readFileSync(file, 'utf8')).map(
        (name) => `${relative(root, file)} imports ${name}`,
      ),
    );
    expect(offenders).toEqual([]);
  });
});

describe('the determinism boundary (I1): machines/pure/', () => {
  // What the pure side may not touch: it folds facts into states, so it reads no clock, no
  // randomness, no file, socket, process or store, sets no timer, and calls no effect.
  const forbidden: [string, RegExp][] = [
    ['a clock', /\bDate\.now\b|\bnew Date\(|\bperformance\.now\b/],
    ['randomness', /\bMath\.random\b|\bcrypto\b/],
    ['a timer', /\bsetTimeout\b|\bsetInterval\b|\bsetImmediate\b/],
    ['I/O', /['"]node:(?:fs|net|http|https|child_process|dgram|worker_threads)(?:\/[^'"]*)?['"]/],
    ['the store', /from\s*['"](?:\.\.\/)+store\//],
    ['an effect', /from\s*['"](?:\.\.\/effects\/|\.\.\/\.\.\/machines\/effects\/)/],
  ];

  function offences(source: string): string[] {
    return forbidden.flatMap(([what, pattern]) => (pattern.test(source) ? [what] : []));
  }

  it('finds what it is looking for', () => {
    expect(
      offences("const t = Date.now();\nimport { x } from '../effects/run-driver.ts';"),
    ).toEqual(['a clock', 'an effect']);
    expect(offences("import { readFile } from 'node:fs/promises';")).toEqual(['I/O']);
    expect(offences("import { lowdbStore } from '../../store/folder/lowdb-store.ts';")).toEqual([
      'the store',
    ]);
    expect(offences('setTimeout(go, 1); crypto.randomUUID(); new Date(0)')).toEqual([
      'a clock',
      'randomness',
      'a timer',
    ]);
    expect(offences("import { and } from 'xstate';\nconst d = data.now;")).toEqual([]);
  });

  it('finds no clock, randomness, timer, I/O, store or effect in machines/pure/', () => {
    const files = sourceFiles(join(root, 'machines', 'pure'));
    expect(files).toContain(join(root, 'machines', 'pure', 'turn-machine.ts'));
    const found = files.flatMap((file) =>
      offences(readFileSync(file, 'utf8')).map((what) => `${relative(root, file)} uses ${what}`),
    );
    expect(found).toEqual([]);
  });
});
