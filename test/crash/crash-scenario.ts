import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4StreamPart,
} from '@ai-sdk/provider';
import { z } from 'zod';
import { type ScriptedResponse, scriptedModel } from '../../adapters/scripted-model.ts';
import type { Fact, FactType, NewFact } from '../../events/facts.ts';
import type { EventStore } from '../../store/event-store.ts';
import { defineTool } from '../../tools/define-tool.ts';

/**
 * The crash tests' conversation: four provider steps, five tool calls of two tools, one
 * permission ask and one retryable failure. The script is a pure function of the request (which
 * calls already have results in the prompt), plus one marker file that makes step 3 fail exactly
 * once per log, so a process restarted at any point continues the same conversation.
 */

/** What the agent child is told to do (passed as JSON in `argv[2]`). */
export interface ChildOptions {
  /** The lowdbStore folder. */
  dir: string;
  sessionId: string;
  /** One line per tool execution, `<callId> <tool> <pid>`, written inside `execute`. */
  sideFile: string;
  /** One line per provider request (`doStream` call), `<pid>`, written before it is answered. */
  requestFile: string;
  /** Exists once step 3 has failed (it fails once per log). */
  markerFile: string;
  /** `start`: send the user message; `recover`: `runtime.recover()` and continue. */
  mode: 'start' | 'recover';
  /** How long each tool sleeps after recording its execution. */
  toolMs: number;
  /** Delay before each stream part the model sends. */
  chunkMs: number;
  /** The `retry-after-ms` of step 3's 429. */
  retryAfterMs: number;
  /**
   * After the append holding this fact is durable, the store never answers again (the child
   * waits to be killed). `nth` picks the nth such fact (default the first); with `cut`, the
   * append is cut right after the fact, as a crash in the middle of one write leaves it.
   */
  hold?: { type: FactType; callId?: string; nth?: number; cut?: boolean };
  /** After the first text delta, the stream sends nothing more (the child waits to be killed). */
  stallStream?: boolean;
  /** Leave permission asks unanswered (the run stays parked until killed). */
  holdPermission?: boolean;
}

/** The calls of each tool-calling step, in order: a step is answered once all of its calls are. */
export const scenarioCalls = [['call_1a', 'call_1b'], ['call_2a', 'call_2b'], ['call_3a']] as const;

export const allCallIds: readonly string[] = scenarioCalls.flat();

/** The user message that starts the run, and the text the run ends with. */
export const userText = 'Fetch alpha and beta, deploy to staging, check delta, then report.';
export const finalText = 'All done.';

const responses: readonly ScriptedResponse[] = [
  {
    text: ['Fetching ', 'alpha and ', 'beta.'],
    toolCalls: [
      { id: 'call_1a', name: 'fetch', input: { key: 'alpha' } },
      { id: 'call_1b', name: 'fetch', input: { key: 'beta' } },
    ],
  },
  {
    text: ['Deploying ', 'to staging.'],
    toolCalls: [
      { id: 'call_2a', name: 'deploy', input: { target: 'staging' } },
      { id: 'call_2b', name: 'fetch', input: { key: 'gamma' } },
    ],
  },
  {
    text: ['Checking ', 'delta.'],
    toolCalls: [{ id: 'call_3a', name: 'fetch', input: { key: 'delta' } }],
  },
  { text: ['All ', 'done.'] },
];

/** Call ids that already have a tool result in the prompt. */
export function answeredCalls(prompt: LanguageModelV4CallOptions['prompt']): Set<string> {
  const answered = new Set<string>();
  for (const message of prompt) {
    if (message.role !== 'tool') continue;
    for (const part of message.content)
      if (part.type === 'tool-result') answered.add(part.toolCallId);
  }
  return answered;
}

/** The scripted response to a request: the first step whose calls are not all answered yet. */
export function respond(
  call: LanguageModelV4CallOptions,
  options: Pick<ChildOptions, 'markerFile' | 'retryAfterMs'>,
): ScriptedResponse {
  const answered = answeredCalls(call.prompt);
  const index = scenarioCalls.findIndex((ids) => !ids.every((id) => answered.has(id)));
  const step = index === -1 ? scenarioCalls.length : index;
  if (step === 2 && !existsSync(options.markerFile)) {
    // Written before the failure is reported: a kill in between only loses the failure.
    writeFileSync(options.markerFile, 'failed once\n');
    return {
      error: {
        status: 429,
        message: 'Rate limited (scripted)',
        headers: { 'retry-after-ms': String(options.retryAfterMs) },
      },
    };
  }
  return responses[step] as ScriptedResponse;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * The scenario's model: `scriptedModel` answering every request with `respond`, its stream
 * paced by `chunkMs` per part and, with `stallStream`, stalled for good after the first text
 * delta. Every request is counted in `requestFile` as it is sent.
 */
export function scenarioModel(options: ChildOptions): LanguageModelV4 {
  // Each request is answered from its own prompt; the step count only bounds the script.
  const inner = scriptedModel(Array.from({ length: 200 }, () => (call) => respond(call, options)));
  let stalled = false;
  return {
    specificationVersion: 'v4',
    provider: inner.provider,
    modelId: inner.modelId,
    supportedUrls: {},
    doGenerate: (call) => inner.doGenerate(call),
    async doStream(call) {
      appendFileSync(options.requestFile, `${process.pid}\n`);
      const result = await inner.doStream(call);
      const paced = new TransformStream<LanguageModelV4StreamPart, LanguageModelV4StreamPart>({
        async transform(part, controller) {
          if (options.chunkMs > 0) await sleep(options.chunkMs);
          controller.enqueue(part);
          if (options.stallStream === true && !stalled && part.type === 'text-delta') {
            stalled = true;
            await new Promise(() => {});
          }
        },
      });
      return { ...result, stream: result.stream.pipeThrough(paced) };
    },
  };
}

/**
 * The scenario's tools: `fetch` (allowed) and `deploy` (asks). Each records its execution in the
 * side file before anything else, then sleeps `toolMs` so kills land mid-execution.
 */
export function scenarioTools(options: ChildOptions, print: (line: string) => void) {
  const record = (name: string, callId: string) => {
    appendFileSync(options.sideFile, `${callId} ${name} ${process.pid}\n`);
    print(`exec ${callId}`);
  };
  return {
    fetch: defineTool({
      description: 'Fetches a record by key.',
      inputSchema: z.object({ key: z.string() }),
      execute: async ({ key }, { callId }) => {
        record('fetch', callId);
        await sleep(options.toolMs);
        return `record ${key}`;
      },
    }),
    deploy: defineTool({
      description: 'Deploys to a target.',
      inputSchema: z.object({ target: z.string() }),
      permission: 'ask',
      execute: async ({ target }, { callId }) => {
        record('deploy', callId);
        await sleep(options.toolMs);
        return `deployed to ${target}`;
      },
    }),
  };
}

/**
 * A store that stops answering once the fact `hold` names is durable: that append never
 * resolves, so the log ends with its write (or, with `cut`, exactly at that fact) when the
 * parent kills the process.
 */
export function holdingStore(
  store: EventStore,
  hold: ChildOptions['hold'],
  onHold: (fact: Fact) => void,
): EventStore {
  if (hold === undefined) return store;
  let seen = 0;
  const matches = (fact: Fact | NewFact) =>
    fact.type === hold.type &&
    (hold.callId === undefined || ('callId' in fact && fact.callId === hold.callId)) &&
    ++seen === (hold.nth ?? 1);
  return {
    async append(sessionId, facts, options) {
      const index = facts.findIndex(matches);
      if (index === -1) return store.append(sessionId, facts, options);
      const kept = hold.cut === true ? facts.slice(0, index + 1) : facts;
      const result = await store.append(sessionId, kept, options);
      onHold(result.appended[index] as Fact);
      return new Promise<never>(() => {});
    },
    read: (sessionId, options) => store.read(sessionId, options),
    subscribe: (sessionId, listener) => store.subscribe(sessionId, listener),
    openRuns: () => store.openRuns(),
    findings: () => store.findings(),
    sessions: () => store.sessions(),
    savePartial: (sessionId, partial) => store.savePartial(sessionId, partial),
    loadPartial: (sessionId) => store.loadPartial(sessionId),
    clearPartial: (sessionId) => store.clearPartial(sessionId),
    close: () => store.close(),
  };
}
