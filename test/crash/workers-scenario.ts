import { appendFileSync } from 'node:fs';
import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4StreamPart,
} from '@ai-sdk/provider';
import { z } from 'zod';
import { type ScriptedResponse, scriptedModel } from '../../adapters/scripted-model.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { answeredCalls } from './crash-scenario.ts';

/**
 * The workers campaign's conversation, one run per session, a pure function of the request (which
 * calls already have results in the prompt, and the run's user text), so any worker that takes a
 * run over continues the same conversation:
 *
 *   step 1  `fetch` c1a, `fetch` c1b (concurrent, allowed)
 *   step 2  variant `ask`: `deploy` c2a (asks permission), `fetch` c2b; variant `plain`: `fetch` c2b
 *   step 3  `All done.` — the run ends completed
 */

/** What a worker child is told (argv[2], as JSON). */
export interface WorkerChildOptions {
  connectionString: string;
  schema: string;
  workerId: string;
  leaseMs: number;
  /** One line per `execute` start, `<sessionId> <callId> <tool> <workerId> <pid>`: this process's own file. */
  sideFile: string;
  /** One line per provider request, `<sessionId> <workerId> <pid>`, written before it is answered. */
  requestFile: string;
  toolMs: number;
  chunkMs: number;
  /** Call `runtime.recover()` once at start (a restarted worker may, or may leave it to the takeover scan). */
  recoverAtStart: boolean;
  /**
   * How much slower the machine is than the quiet one (default 1): the store's timeouts are its
   * defaults times this (at slowdown 34 a decide met a 30 s query timeout: StoreUnavailableError).
   */
  slowdown?: number;
  /**
   * A planted bug, to show the campaign still catches one: every `fetch` runs its side effect
   * twice (as a tool run again after a crash would).
   */
  plantDoubleExecution?: boolean;
  /**
   * Run the service scenario instead (test/crash/service-scenario.ts): its tools call the
   * external service at `url` (with `plantBlindReconcile`, `charge`'s `reconcile` never asks it).
   */
  service?: { url: string; plantBlindReconcile?: boolean };
}

export type Variant = 'ask' | 'plain';

/** The user text of a session's run: the session id (for the side files) and its variant. */
export function userTextOf(sessionId: string, variant: Variant): string {
  return `run ${sessionId} ${variant}`;
}

/** The session id and variant a prompt's user text (`run <sessionId> <variant>`) names. */
export function runOf(prompt: LanguageModelV4CallOptions['prompt']): {
  sessionId: string;
  variant: Variant;
} {
  for (const message of prompt) {
    if (message.role !== 'user') continue;
    for (const part of message.content) {
      if (part.type !== 'text') continue;
      const [, sessionId = '?', variant] = part.text.split(' ');
      return { sessionId, variant: variant === 'ask' ? 'ask' : 'plain' };
    }
  }
  return { sessionId: '?', variant: 'plain' };
}

/** The calls of each tool step of a variant. */
export function stepCalls(variant: Variant): string[][] {
  return [['c1a', 'c1b'], variant === 'ask' ? ['c2a', 'c2b'] : ['c2b']];
}

export function respond(call: LanguageModelV4CallOptions): ScriptedResponse {
  const { variant } = runOf(call.prompt);
  const answered = answeredCalls(call.prompt);
  const step = stepCalls(variant).findIndex((ids) => !ids.every((id) => answered.has(id)));
  if (step === 0) {
    return {
      text: ['Fetching ', 'a and b.'],
      toolCalls: [
        { id: 'c1a', name: 'fetch', input: { key: 'a' } },
        { id: 'c1b', name: 'fetch', input: { key: 'b' } },
      ],
    };
  }
  if (step === 1) {
    return {
      text: ['Next ', 'step.'],
      toolCalls: [
        ...(variant === 'ask' ? [{ id: 'c2a', name: 'deploy', input: { target: 'staging' } }] : []),
        { id: 'c2b', name: 'fetch', input: { key: 'c' } },
      ],
    };
  }
  return { text: ['All ', 'done.'] };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The scenario's model, paced by `chunkMs` per stream part; every request is counted first. */
export function workersModel(options: WorkerChildOptions): LanguageModelV4 {
  return pacedModel(respond, options);
}

/**
 * `scriptedModel` answering each request with `answer` (a pure function of the request), its
 * stream paced by `chunkMs` per part; every request first appends `<sessionId> <workerId> <pid>`
 * (the session its user text names) to `requestFile`.
 */
export function pacedModel(
  answer: (call: LanguageModelV4CallOptions) => ScriptedResponse,
  options: { requestFile: string; chunkMs: number; workerId?: string },
): LanguageModelV4 {
  const inner = scriptedModel((call) => answer(call));
  return {
    specificationVersion: 'v4',
    provider: inner.provider,
    modelId: inner.modelId,
    supportedUrls: {},
    doGenerate: (call) => inner.doGenerate(call),
    async doStream(call) {
      const { sessionId } = runOf(call.prompt);
      appendFileSync(
        options.requestFile,
        `${sessionId} ${options.workerId ?? '-'} ${process.pid}\n`,
      );
      const result = await inner.doStream(call);
      const paced = new TransformStream<LanguageModelV4StreamPart, LanguageModelV4StreamPart>({
        async transform(part, controller) {
          if (options.chunkMs > 0) await sleep(options.chunkMs);
          controller.enqueue(part);
        },
      });
      return { ...result, stream: result.stream.pipeThrough(paced) };
    },
  };
}

/**
 * `fetch` (allowed) and `deploy` (asks). Each records its execution in this process's side file
 * before anything else, then sleeps `toolMs`, so kills and stops land mid-execution.
 */
export function workersTools(options: WorkerChildOptions) {
  const record = (sessionId: string, name: string, callId: string) => {
    appendFileSync(
      options.sideFile,
      `${sessionId} ${callId} ${name} ${options.workerId} ${process.pid}\n`,
    );
  };
  return {
    fetch: defineTool({
      description: 'Fetches a record by key.',
      inputSchema: z.object({ key: z.string() }),
      execute: async ({ key }, { callId, sessionId }) => {
        record(sessionId, 'fetch', callId);
        if (options.plantDoubleExecution === true) record(sessionId, 'fetch', callId);
        await sleep(options.toolMs);
        return `record ${key}`;
      },
    }),
    deploy: defineTool({
      description: 'Deploys to a target.',
      inputSchema: z.object({ target: z.string() }),
      permission: 'ask',
      execute: async ({ target }, { callId, sessionId }) => {
        record(sessionId, 'deploy', callId);
        await sleep(options.toolMs);
        return `deployed to ${target}`;
      },
    }),
  };
}
