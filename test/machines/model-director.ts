import type { LanguageModelV4, LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { expect } from 'vitest';
import { z } from 'zod';
import { type ScriptedResponse, scriptedModel } from '../../adapters/scripted-model.ts';
import type { Fact } from '../../events/facts.ts';
import type { IdGenerator } from '../../events/ids.ts';
import { createRuntime } from '../../runtime.ts';
import type { EventStore } from '../../store/event-store.ts';
import { defineTool } from '../../tools/define-tool.ts';
import type { ModelFact, ModelPath } from './model-paths.ts';

/**
 * Runs a model path against the real runtime in lockstep. Every effect the runtime depends on
 * waits at a gate the director opens when the path says so: provider requests, tool executions
 * and permission checks. Interventions (steer, stop, decide, a crash and `recover()`) are made
 * when the path reaches them. After each fact the live log is compared with the path.
 */

type Waiter<T> = { resolve: (value: T) => void; reject: (error: unknown) => void };

/** A keyed rendezvous: the runtime side `arrive`s and waits; the director `release`s. */
class Gates<T> {
  private arrived = new Map<string, Waiter<T>[]>();
  private listeners = new Map<string, (() => void)[]>();

  arrive(key: string, signal?: AbortSignal): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const waiter = { resolve, reject };
      this.arrived.set(key, [...(this.arrived.get(key) ?? []), waiter]);
      signal?.addEventListener('abort', () => reject(signal.reason ?? new Error('aborted')), {
        once: true,
      });
      for (const listener of this.listeners.get(key) ?? []) listener();
      this.listeners.delete(key);
    });
  }

  /** Waits until something arrived at `key`, then releases the oldest arrival with `value`. */
  async release(key: string, value: T): Promise<void> {
    while ((this.arrived.get(key)?.length ?? 0) === 0) {
      await new Promise<void>((wake) =>
        this.listeners.set(key, [...(this.listeners.get(key) ?? []), wake]),
      );
    }
    const [first, ...rest] = this.arrived.get(key) as Waiter<T>[];
    this.arrived.set(key, rest);
    first?.resolve(value);
  }
}

/**
 * Where the path intervenes without a gate: in `projecting`, the fact that enters it is held at
 * its append while a stop is queued behind it, or the process dies right after it; within the
 * one write of a step's response and decisions, the process dies with only a prefix durable.
 */
interface ProjectingPlan {
  /** seq of the fact entering `projecting` → queue a stop while its append is held. */
  stopAt: Set<number>;
  /** seq of the fact entering `projecting` → the process dies once it is durable. */
  crashAt: Set<number>;
  /** seq of the last fact of a write that a crash cuts → the rest of that write is lost. */
  cutAt: Set<number>;
}

/** One process's view of the shared store: it can die (appends never return) or hold an append. */
function processStore(shared: EventStore, plan: ProjectingPlan, onHold: () => Promise<void>) {
  let dead = false;
  const store: EventStore = {
    read: (sessionId, options) => shared.read(sessionId, options),
    subscribe: (sessionId, listener) => shared.subscribe(sessionId, listener),
    openRuns: () => shared.openRuns(),
    findings: () => shared.findings(),
    sessions: () => shared.sessions(),
    savePartial: (sessionId, partial) => shared.savePartial(sessionId, partial),
    loadPartial: (sessionId) => shared.loadPartial(sessionId),
    clearPartial: (sessionId) => shared.clearPartial(sessionId),
    async append(sessionId, facts, options) {
      if (dead) return new Promise(() => {});
      const first = (options?.expectedSeq ?? -1) + 1;
      const seqs = facts.map((_, index) => first + index);
      if (seqs.filter((seq) => plan.stopAt.delete(seq)).length > 0) await onHold();
      const cut = seqs.find((seq) => plan.cutAt.delete(seq));
      if (cut !== undefined && cut < first + facts.length - 1) {
        await shared.append(sessionId, facts.slice(0, cut - first + 1), options);
        dead = true;
        return new Promise(() => {});
      }
      const result = await shared.append(sessionId, facts, options);
      if (seqs.filter((seq) => plan.crashAt.delete(seq)).length > 0) dead = true;
      return result;
    },
    close: async () => {},
  };
  return {
    store,
    crash: () => {
      dead = true;
    },
  };
}

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

function responseFor(fact: ModelFact, next: ModelFact | undefined): ScriptedResponse {
  const longWait =
    next?.variant === 'stop' || next?.variant === 'recover' || next?.variant === 'steer';
  switch (fact.variant) {
    case 'text':
    case 'summary':
      return { text: 'x' };
    case 'length':
      return { text: 'x', finishReason: 'length' };
    case 'call-ok':
      return { text: 'x', toolCalls: [{ id: 'c_ok', name: 'ok' }] };
    case 'call-fails':
      return { text: 'x', toolCalls: [{ id: 'c_fails', name: 'fails' }] };
    case 'call-ask':
      return { text: 'x', toolCalls: [{ id: 'c_ask', name: 'ask' }] };
    case 'call-ok+ask':
      return {
        text: 'x',
        toolCalls: [
          { id: 'c_ok', name: 'ok' },
          { id: 'c_ask', name: 'ask' },
        ],
      };
    case 'call-withheld':
      return { text: 'x', toolCalls: [{ id: 'c_withheld', name: 'ok' }], finishReason: 'length' };
    case 'call-rec':
      return { text: 'x', toolCalls: [{ id: 'c_rec', name: 'rec' }] };
    case 'call-idem':
      return { text: 'x', toolCalls: [{ id: 'c_idem', name: 'idem' }] };
    case 'call-ok+rec':
      return {
        text: 'x',
        toolCalls: [
          { id: 'c_ok', name: 'ok' },
          { id: 'c_rec', name: 'rec' },
        ],
      };
    case 'rate-limit':
      return { error: { status: 429, headers: { 'retry-after-ms': longWait ? '600000' : '1' } } };
    case 'after-output':
      return { text: 'x', disconnect: true };
    case 'overflow':
      return {
        error: {
          status: 400,
          body: {
            error: { code: 'context_length_exceeded', message: 'maximum context length exceeded' },
          },
        },
      };
    case 'auth':
    case 'summary-fails':
      return { error: { status: 401, message: 'unauthorized' } };
    default:
      throw new Error(`no provider response for ${fact.variant}`);
  }
}

/** One "process": a runtime over the shared store, its gates and its crash switch. */
function startProcess(
  shared: EventStore,
  generateId: IdGenerator,
  window: boolean,
  plan: ProjectingPlan,
  onHold: () => Promise<void>,
) {
  const requests = new Gates<ScriptedResponse>();
  const executions = new Gates<'success' | 'error'>();
  const permissions = new Gates<'allow' | 'ask'>();
  const checks = new Gates<'done' | 'not-done' | 'unknown'>();
  const executed: string[] = [];
  const model: LanguageModelV4 = {
    specificationVersion: 'v4',
    provider: 'scripted',
    modelId: 'gated',
    supportedUrls: {},
    doGenerate: () => Promise.reject(new Error('not used')),
    async doStream(options: LanguageModelV4CallOptions) {
      const response = await requests.arrive('request', options.abortSignal);
      return scriptedModel([response]).doStream(options);
    },
  };
  // After a restart: `rec`'s check waits for the director's answer; `idem` runs again unasked.
  const gatedTool = (
    name: string,
    extra: { idempotent?: boolean; reconcile?: Parameters<typeof defineTool>[0]['reconcile'] } = {},
  ) =>
    defineTool({
      description: name,
      inputSchema: z.object({}),
      permission: () => permissions.arrive(`c_${name}`),
      execute: async (_input, { signal, callId }) => {
        executed.push(callId);
        if ((await executions.arrive(callId, signal)) === 'error')
          throw new Error(`${callId} failed`);
        return 'done';
      },
      ...extra,
    });
  const rec = gatedTool('rec', {
    reconcile: async (_input, { signal, callId }) => {
      const answer = await checks.arrive(callId, signal);
      if (answer === 'done') return { status: 'done', output: 'done' };
      return answer === 'not-done'
        ? { status: 'not-done' }
        : { status: 'unknown', reason: 'cannot tell' };
    },
  });
  const idem = gatedTool('idem', { idempotent: true });
  const process = processStore(shared, plan, onHold);
  const runtime = createRuntime({
    model,
    store: process.store,
    tools: { ok: gatedTool('ok'), fails: gatedTool('fails'), ask: gatedTool('ask'), rec, idem },
    generateId,
    limits: {
      maxSteps: 2,
      maxAttempts: 2,
      toolOutputChars: 1_000,
      stopGraceMs: 1_000,
      // A stop or a crash during the backoff needs a Retry-After that keeps the run waiting.
      maxRetryAfterMs: 600_000,
      ...(window ? { contextWindowTokens: 1 } : {}),
    },
  });
  return { runtime, requests, executions, permissions, checks, executed, ...process };
}

const decisionGate = (fact: ModelFact) =>
  fact.type === 'tool.permission.requested' ? 'ask' : 'allow';

/** A decision of the step's own write (step.completed and its decisions, see model-paths.ts). */
const isDecision = (fact: ModelFact | undefined) =>
  fact?.variant === 'auto' &&
  (fact.type === 'tool.permission.decided' ||
    fact.type === 'tool.permission.requested' ||
    (fact.type === 'tool.settled' && fact.outcome === 'withheld'));

/** Runs the path live and returns the run's facts once the run has ended. */
export async function runModelPath(
  path: ModelPath,
  shared: EventStore,
  generateId: IdGenerator,
  sessionId: string,
) {
  // run.started takes the next seq; path fact `index` is appended with seq `runStartSeq + 1 + index`.
  const runStartSeq = ((await shared.read(sessionId)).at(-1)?.seq ?? 0) + 1;
  const plan: ProjectingPlan = { stopAt: new Set(), crashAt: new Set(), cutAt: new Set() };
  // Facts of a step's own write: its step.completed with calls and the decisions that follow it.
  const inWrite = path.facts.map(() => false);
  path.facts.forEach((fact, index) => {
    const before = index === 0 ? 'projecting' : path.states[index - 1];
    // The write is whole once the machine has left `deciding`.
    const writeOpen =
      index > 0 && inWrite[index - 1] === true && before === 'settlingTools.deciding';
    inWrite[index] =
      (fact.type === 'step.completed' && fact.toolCalls.length > 0) ||
      (isDecision(fact) && writeOpen);
    if (fact.variant === 'recover' && writeOpen) {
      // A crash cutting the write right after the previous fact.
      plan.cutAt.add(runStartSeq + index);
      return;
    }
    if (before !== 'projecting' || index === 0) return;
    if (fact.variant === 'stop') plan.stopAt.add(runStartSeq + index);
    if (fact.variant === 'recover') plan.crashAt.add(runStartSeq + index);
  });
  const onHold = async () => {
    void current.runtime.stop({ sessionId });
    await flush(); // the stop's commit is now queued behind the held append
  };
  let current = startProcess(shared, generateId, path.window, plan, onHold);
  const executed: string[] = [];
  const turn = await current.runtime.send({ sessionId, text: 'go' });
  const liveFacts = async () =>
    (await shared.read(sessionId)).filter((fact) => fact.runId === turn.runId);
  const waitForCount = async (count: number) => {
    for (let spins = 0; (await liveFacts()).length < count; spins += 1) {
      if (spins > 2_000) {
        const types = (await liveFacts()).map((fact) => fact.type);
        throw new Error(
          `${path.covers}: the run did not reach fact ${count}: ${JSON.stringify(types)}`,
        );
      }
      await flush();
    }
  };

  for (let index = 0; index < path.facts.length; index += 1) {
    const fact = path.facts[index] as ModelFact;
    const next = path.facts[index + 1];
    const inProjecting = index > 0 && path.states[index - 1] === 'projecting';
    switch (fact.variant) {
      case 'stop':
        if (!inProjecting) await current.runtime.stop({ sessionId });
        break;
      case 'steer':
        await current.runtime.steer({ sessionId, text: 'steer' });
        break;
      case 'allow':
      case 'deny':
      case 'abort':
        if (fact.type === 'tool.permission.decided') {
          await current.runtime.decide({ sessionId, callId: fact.callId, decision: fact.decision });
        }
        break;
      case 'recover':
        if (!inProjecting) current.crash();
        executed.push(...current.executed);
        current = startProcess(shared, generateId, path.window, plan, onHold);
        await current.runtime.recover();
        // Recovery also commits the marks of the other calls and the run.recovered that follow.
        if (fact.type === 'tool.indeterminate') {
          while (index + 1 < path.facts.length && path.facts[index]?.type !== 'run.recovered')
            index += 1;
        }
        break;
      default:
        if (fact.variant === 'with-previous') {
          // Committed in the append of the fact before it (a check's `done` and its settlement).
        } else if (fact.type === 'step.completed' && inWrite[index]) {
          // The runtime decides every call before the write: open each permission gate now.
          void current.requests.release('request', responseFor(fact, next));
          for (const call of fact.toolCalls) {
            if (call.proof !== null)
              void current.permissions.release(call.callId, call.name === 'ask' ? 'ask' : 'allow');
          }
        } else if (inWrite[index]) {
          // A decision of the write above: its gate is open already.
        } else if (
          fact.type === 'step.completed' ||
          fact.type === 'step.failed' ||
          fact.type === 'compaction.completed' ||
          fact.type === 'compaction.failed'
        ) {
          void current.requests.release('request', responseFor(fact, next));
        } else if (
          (fact.type === 'tool.permission.decided' && fact.by === 'policy') ||
          fact.type === 'tool.permission.requested'
        ) {
          void current.permissions.release(fact.callId, decisionGate(fact));
        } else if (
          fact.type === 'tool.settled' &&
          (fact.outcome === 'success' || fact.outcome === 'error')
        ) {
          void current.executions.release(fact.callId, fact.outcome);
        } else if (
          fact.type === 'tool.reconciled' &&
          (fact.variant === 'done' || fact.variant === 'not-done' || fact.variant === 'unknown')
        ) {
          void current.checks.release(fact.callId, fact.variant);
        } else if (fact.type === 'tool.permission.decided' && fact.decision === 'report-unknown') {
          await current.runtime.decide({
            sessionId,
            callId: fact.callId,
            decision: 'report-unknown',
          });
        }
    }
    // run.started is fact 1 of the run; path fact `index` is live fact `index + 2`. The facts of
    // one write appear together: wait once its last one (or the crash cutting it) is reached.
    if (inWrite[index] && inWrite[index + 1]) continue;
    await waitForCount(index + 2);
  }

  const facts = await liveFacts();
  comparePath(path, facts);
  if (!facts.some((fact) => fact.type === 'run.ended')) {
    await current.runtime.stop({ sessionId }).catch(() => {});
    await waitForEnd(liveFacts, path);
  }
  executed.push(...current.executed);
  return { facts: await liveFacts(), executed };
}

async function waitForEnd(liveFacts: () => Promise<Fact[]>, path: ModelPath) {
  for (let spins = 0; !(await liveFacts()).some((fact) => fact.type === 'run.ended'); spins += 1) {
    if (spins > 2_000) throw new Error(`${path.covers}: the run did not end after a stop`);
    await flush();
  }
}

/** The live facts after run.started follow the path: same types, same recorded states. */
function comparePath(path: ModelPath, facts: Fact[]) {
  const live = facts.slice(1, 1 + path.facts.length);
  const describe = (fact: Fact | ModelFact) =>
    `${fact.type}${'callId' in fact ? `(${fact.callId})` : ''}${'outcome' in fact ? `=${fact.outcome}` : ''}${'decision' in fact ? `=${fact.decision}` : ''}${'answer' in fact ? `=${fact.answer}` : ''}${'check' in fact && fact.check !== undefined ? `?${fact.check}` : ''}`;
  const expected = path.facts.map((fact, index) => `${describe(fact)} → ${path.states[index]}`);
  const actual = live.map((fact) => `${describe(fact)} → ${fact.state}`);
  // Runners and abandoners of one step start concurrently: their first facts (tool.started, or
  // a settlement that needs no gate) may interleave either way, so compare such runs as sets.
  const concurrent = /^(tool\.started\(|tool\.settled\(.*\)=(denied|cancelled|unknown) )/;
  const normalize = (lines: string[]) => {
    const result = [...lines];
    for (let start = 0; start < result.length; start += 1) {
      let end = start;
      while (end < result.length && concurrent.test(result[end] ?? '')) end += 1;
      if (end - start < 2) continue;
      const facts = result
        .slice(start, end)
        .map((line) => line.replace(/ → .*$/, ''))
        .sort();
      const states = result.slice(start, end).map((line) => line.replace(/^.* → /, ''));
      result.splice(
        start,
        end - start,
        ...facts.map((line, offset) => `${line} → ${states[offset]}`),
      );
      start = end;
    }
    return result;
  };
  expect(normalize(actual), path.covers).toEqual(normalize(expected));
}
