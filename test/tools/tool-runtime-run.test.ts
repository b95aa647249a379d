import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { hashJson } from '../../events/json.ts';
import { defineTool } from '../../tools/define-tool.ts';
import type {
  DecidedPermission,
  SettleContext,
  Tool,
  ToolExecuteContext,
} from '../../tools/tool.ts';
import { createToolRuntime } from '../../tools/tool-runtime.ts';
import { createToolLog, decisionOf, provenCall } from './helpers/tool-log.ts';

afterEach(() => {
  vi.useRealTimers();
});

function deferred<TValue = void>() {
  let resolve!: (value: TValue) => void;
  const promise = new Promise<TValue>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

/** Decides a call, then runs it with the decision the log holds (as the turn machine does). */
async function settleCall(
  runtime: ReturnType<typeof createToolRuntime>,
  log: ReturnType<typeof createToolLog>,
  stepId: string,
  call: ReturnType<typeof provenCall>,
): Promise<void> {
  await runtime.decide(call, log.context(stepId));
  const decision = decisionOf(log.facts(), call.callId);
  if (decision === undefined) return;
  await runtime.run(call, decision, log.context(stepId));
}

const allow = (inputHash: string): DecidedPermission => ({
  decision: 'allow',
  inputHash,
  by: 'policy',
});

describe('schema-derived values', () => {
  it('reach the permission function, tool.started and execute identically', async () => {
    const seenByPermission: unknown[] = [];
    const seenByExecute: unknown[] = [];
    const tool = defineTool({
      description: 'Derived',
      inputSchema: z.object({
        path: z.string().default('README.md'),
        name: z.string().transform((value) => value.toUpperCase()),
        count: z.preprocess(
          (value) => (typeof value === 'string' ? Number(value) : value),
          z.number(),
        ),
      }),
      permission: (input) => {
        seenByPermission.push(input);
        return 'allow';
      },
      execute: async (input) => {
        seenByExecute.push(input);
        return 'done';
      },
    });
    const runtime = createToolRuntime({ tools: { derived: tool } });
    const log = createToolLog();
    const call = provenCall('derived', { name: 'abc', count: '3' });
    await log.completeStep('step_1', [call]);
    await settleCall(runtime, log, 'step_1', call);

    const derived = { path: 'README.md', name: 'ABC', count: 3 };
    expect(seenByPermission).toEqual([derived]);
    expect(seenByExecute).toEqual([derived]);
    expect(log.ofType('tool.started')).toMatchObject([
      { id: 'step_1:call_1:started', input: derived, inputHash: hashJson(derived) },
    ]);
    expect(log.ofType('tool.settled')).toMatchObject([{ outcome: 'success', text: 'done' }]);
    // The call record itself is untouched.
    expect(call.input).toEqual({ name: 'abc', count: '3' });
  });
});

describe('exactly once', () => {
  function onceTool() {
    const execute = vi.fn(async ({ n }: { n: number }) => n + 1);
    return {
      tool: defineTool({ description: 'Once', inputSchema: z.object({ n: z.number() }), execute }),
      execute,
    };
  }

  it('executes a proven, allowed call once with its input', async () => {
    const { tool, execute } = onceTool();
    const runtime = createToolRuntime({ tools: { once: tool } });
    const log = createToolLog();
    const call = provenCall('once', { n: 1 });
    await log.completeStep('step_1', [call]);
    await settleCall(runtime, log, 'step_1', call);
    expect(execute).toHaveBeenCalledTimes(1);
    expect(execute.mock.calls[0]?.[0]).toEqual({ n: 1 });
    expect(log.facts().map((fact) => fact.type)).toEqual([
      'step.completed',
      'tool.permission.decided',
      'tool.started',
      'tool.settled',
    ]);
    expect(log.ofType('tool.settled')).toMatchObject([
      { outcome: 'success', text: '2', output: 2, truncated: false },
    ]);
  });

  it('running the same call twice, in turn or at once, executes it once', async () => {
    const { tool, execute } = onceTool();
    const runtime = createToolRuntime({ tools: { once: tool } });
    const log = createToolLog();
    const call = provenCall('once', { n: 1 });
    const context = await log.completeStep('step_1', [call]);
    const decision = allow(hashJson({ n: 1 }));
    await Promise.all([runtime.run(call, decision, context), runtime.run(call, decision, context)]);
    await runtime.run(call, decision, log.context('step_1'));
    expect(execute).toHaveBeenCalledTimes(1);
    expect(log.ofType('tool.started')).toHaveLength(1);
    expect(log.ofType('tool.settled')).toHaveLength(1);
  });

  it('two runtimes sharing one log (two processes) execute a call once', async () => {
    const { tool, execute } = onceTool();
    const first = createToolRuntime({ tools: { once: tool } });
    const second = createToolRuntime({ tools: { once: tool } });
    const log = createToolLog();
    const call = provenCall('once', { n: 1 });
    const context = await log.completeStep('step_1', [call]);
    const decision = allow(hashJson({ n: 1 }));
    await Promise.all([first.run(call, decision, context), second.run(call, decision, context)]);
    expect(execute).toHaveBeenCalledTimes(1);
  });

  it('the same callId in two steps executes once per step', async () => {
    const { tool, execute } = onceTool();
    const runtime = createToolRuntime({ tools: { once: tool } });
    const log = createToolLog();
    const call = provenCall('once', { n: 1 });
    await log.completeStep('step_1', [call]);
    await settleCall(runtime, log, 'step_1', call);
    await log.completeStep('step_2', [call]);
    await settleCall(runtime, log, 'step_2', call);
    expect(execute).toHaveBeenCalledTimes(2);
    expect(log.ofType('tool.settled').map((fact) => fact.id)).toEqual([
      'step_1:call_1:settled',
      'step_2:call_1:settled',
    ]);
  });

  it('executes nothing when tool.started is not taken (the run stopped)', async () => {
    const { tool, execute } = onceTool();
    const runtime = createToolRuntime({ tools: { once: tool } });
    const log = createToolLog();
    const call = provenCall('once', { n: 1 });
    const context = await log.completeStep('step_1', [call]);
    log.stopAccepting();
    await runtime.run(call, allow(hashJson({ n: 1 })), context);
    expect(execute).toHaveBeenCalledTimes(0);
    expect(log.facts()).toHaveLength(1);
  });

  it('refuses to execute when the validated input no longer matches the decision', async () => {
    const { tool, execute } = onceTool();
    const runtime = createToolRuntime({ tools: { once: tool } });
    const log = createToolLog();
    const call = provenCall('once', { n: 1 });
    const context = await log.completeStep('step_1', [call]);
    await runtime.run(call, allow(hashJson({ n: 2 })), context);
    expect(execute).toHaveBeenCalledTimes(0);
    expect(log.ofType('tool.settled')).toMatchObject([
      {
        outcome: 'error',
        text: `The input of this call changed after its permission was decided (decided for ${hashJson({ n: 2 })}, now ${hashJson({ n: 1 })}), so it was not run. Call the tool again if it is still needed.`,
      },
    ]);
  });

  it('never executes a call without proof, even with an allow', async () => {
    const { tool, execute } = onceTool();
    const runtime = createToolRuntime({ tools: { once: tool } });
    const log = createToolLog();
    const call = { ...provenCall('once', { n: 1 }), proof: null, withheld: 'Not proven.' };
    const context = await log.completeStep('step_1', [call]);
    await runtime.run(call, allow(hashJson({ n: 1 })), context);
    expect(execute).toHaveBeenCalledTimes(0);
    expect(log.ofType('tool.settled')).toMatchObject([
      { outcome: 'withheld', text: 'Not proven.' },
    ]);
  });
});

describe('ordering', () => {
  it('tool.started is in the store before execute begins, tool.settled after it ends', async () => {
    const log = createToolLog();
    const seenInside: string[][] = [];
    const tool = defineTool({
      description: 'Looks at the log',
      inputSchema: z.object({}),
      execute: async () => {
        seenInside.push((await log.store.read('session_1')).map((fact) => fact.type));
        return 'ok';
      },
    });
    const runtime = createToolRuntime({ tools: { look: tool } });
    const call = provenCall('look', {});
    await log.completeStep('step_1', [call]);
    await settleCall(runtime, log, 'step_1', call);
    expect(seenInside).toEqual([['step.completed', 'tool.permission.decided', 'tool.started']]);
    const stored = await log.store.read('session_1');
    expect(stored.map((fact) => [fact.seq, fact.type])).toEqual([
      [1, 'step.completed'],
      [2, 'tool.permission.decided'],
      [3, 'tool.started'],
      [4, 'tool.settled'],
    ]);
  });
});

describe('results', () => {
  it('truncates long output with the marker and keeps no output value', async () => {
    const tool = defineTool({
      description: 'Loud',
      inputSchema: z.object({}),
      execute: () => 'x'.repeat(50_000),
    });
    const runtime = createToolRuntime({ tools: { loud: tool } });
    const log = createToolLog({ limits: { toolOutputChars: 1_000 } });
    const call = provenCall('loud', {});
    await log.completeStep('step_1', [call]);
    await settleCall(runtime, log, 'step_1', call);
    const [settled] = log.ofType('tool.settled');
    expect(settled?.outcome).toBe('success');
    expect(settled?.truncated).toBe(true);
    expect(settled?.output).toBeUndefined();
    expect(settled?.text.length).toBeLessThanOrEqual(1_000);
    expect(settled?.text).toMatch(
      /\n\[… 49\d{3} characters cut here\. Do not re-run commands with side effects just to see them; ask for less output instead \(a smaller range, a filter\)\.\]\n/,
    );
  });

  it('settles a throw as error with the message, redacted of the tool secrets', async () => {
    const tool = defineTool({
      description: 'Calls an API',
      inputSchema: z.object({ apiKey: z.string() }),
      secrets: ({ apiKey }) => [apiKey],
      execute: ({ apiKey }) => {
        throw new Error(`request with key ${apiKey} was refused`);
      },
    });
    const runtime = createToolRuntime({ tools: { api: tool } });
    const log = createToolLog();
    const call = provenCall('api', { apiKey: 'key-12345' });
    await log.completeStep('step_1', [call]);
    await settleCall(runtime, log, 'step_1', call);
    expect(log.ofType('tool.settled')).toMatchObject([
      {
        outcome: 'error',
        text: 'The tool failed: request with key [redacted] was refused',
        truncated: false,
      },
    ]);
    expect(JSON.stringify(log.ofType('tool.settled'))).not.toContain('key-12345');
  });

  it('settles throws of non-errors and a throwing secrets function without throwing', async () => {
    const tool = defineTool({
      description: 'Misbehaves',
      inputSchema: z.object({ kind: z.enum(['object', 'number']) }),
      secrets: () => {
        throw new Error('secrets exploded');
      },
      execute: ({ kind }) => {
        throw kind === 'object' ? { code: 'E_BAD' } : 42;
      },
    });
    const runtime = createToolRuntime({ tools: { bad: tool } });
    const log = createToolLog();
    const calls = [
      provenCall('bad', { kind: 'object' }, 'call_1'),
      provenCall('bad', { kind: 'number' }, 'call_2'),
    ];
    await log.completeStep('step_1', calls);
    for (const call of calls) await settleCall(runtime, log, 'step_1', call);
    expect(log.ofType('tool.settled').map(({ outcome, text }) => ({ outcome, text }))).toEqual([
      { outcome: 'error', text: 'The tool failed: {"code":"E_BAD"}' },
      { outcome: 'error', text: 'The tool failed: 42' },
    ]);
  });

  it('records durationMs from the injected clock', async () => {
    let clock = 100;
    const tool = defineTool({
      description: 'Takes time',
      inputSchema: z.object({}),
      execute: () => {
        clock += 42;
        return 'ok';
      },
    });
    const runtime = createToolRuntime({ tools: { slow: tool }, now: () => clock });
    const log = createToolLog();
    const call = provenCall('slow', {});
    await log.completeStep('step_1', [call]);
    await settleCall(runtime, log, 'step_1', call);
    expect(log.ofType('tool.settled')[0]?.durationMs).toBe(42);
  });

  it.each([
    [
      { decision: 'deny', by: 'user', reason: 'too risky' },
      'denied',
      'This call was denied by the user; it was not run. Reason: Too risky. Do not repeat it unchanged.',
    ],
    [
      { decision: 'deny', by: 'policy' },
      'denied',
      'This call was denied by the permission policy; it was not run. Do not repeat it unchanged.',
    ],
    [
      { decision: 'report-unknown', by: 'user' },
      'unknown',
      'The outcome of this call is unknown: it may or may not have run. Inspect the current state before retrying.',
    ],
    [
      { decision: 'abort', by: 'user', reason: 'wrong file.' },
      'cancelled',
      'This call was aborted by the user; it was not run. Reason: Wrong file.',
    ],
  ] as const)('settles a %o decision as %s without executing', async (decision, outcome, text) => {
    const execute = vi.fn(() => 'ran');
    const tool = defineTool({ description: 'Any', inputSchema: z.object({}), execute });
    const runtime = createToolRuntime({ tools: { any: tool } });
    const log = createToolLog();
    const call = provenCall('any', {});
    const context = await log.completeStep('step_1', [call]);
    await runtime.run(call, { ...decision, inputHash: hashJson({}) }, context);
    expect(execute).toHaveBeenCalledTimes(0);
    expect(log.ofType('tool.settled')).toMatchObject([{ outcome, text }]);
  });

  it('says an aborted call may have partly run when it had started', async () => {
    const tool = defineTool({ description: 'Any', inputSchema: z.object({}), execute: () => 'x' });
    const runtime = createToolRuntime({ tools: { any: tool } });
    const log = createToolLog();
    const call = provenCall('any', {});
    await log.completeStep('step_1', [call]);
    await log.commit({
      type: 'tool.started',
      id: 'step_1:call_1:started',
      callId: 'call_1',
      name: 'any',
      input: {},
      inputHash: hashJson({}),
    });
    await runtime.run(
      call,
      { decision: 'abort', by: 'user', inputHash: hashJson({}) },
      log.context('step_1'),
    );
    expect(log.ofType('tool.settled')[0]?.text).toBe(
      'This call was aborted by the user. It had started, so it may have partly run; inspect the current state before retrying.',
    );
  });

  it('abandon settles cancelled or unknown with the reason, once', async () => {
    const tool = defineTool({ description: 'Any', inputSchema: z.object({}), execute: () => 'x' });
    const runtime = createToolRuntime({ tools: { any: tool } });
    const log = createToolLog();
    const first = provenCall('any', {}, 'call_1');
    const second = provenCall('any', {}, 'call_2');
    const context = await log.completeStep('step_1', [first, second]);
    await runtime.abandon(first, 'cancelled', 'the run was stopped before this call ran', context);
    await runtime.abandon(
      second,
      'unknown',
      'The run was stopped after this call started.',
      context,
    );
    await runtime.abandon(second, 'cancelled', 'again', context);
    expect(
      log.ofType('tool.settled').map(({ callId, outcome, text }) => ({ callId, outcome, text })),
    ).toEqual([
      {
        callId: 'call_1',
        outcome: 'cancelled',
        text: 'This call was cancelled; it was not run. The run was stopped before this call ran.',
      },
      {
        callId: 'call_2',
        outcome: 'unknown',
        text: 'The outcome of this call is unknown: it may or may not have run. The run was stopped after this call started. Inspect the current state before retrying.',
      },
    ]);
  });
});

describe('timeouts and abort', () => {
  function hangingTool(timeoutMs = 50) {
    const started = deferred<ToolExecuteContext>();
    const finish = deferred<string>();
    const tool: Tool<Record<string, never>, string> = defineTool({
      description: 'Hangs',
      inputSchema: z.object({}),
      timeoutMs,
      execute: (_input, context) => {
        started.resolve(context);
        return finish.promise;
      },
    });
    return { tool, started, finish };
  }

  async function startRun(tool: Tool, limits = {}) {
    const runtime = createToolRuntime({ tools: { hang: tool } });
    const log = createToolLog({ limits });
    const call = provenCall('hang', {});
    const context: SettleContext = await log.completeStep('step_1', [call]);
    const running = runtime.run(call, allow(hashJson({})), context);
    return { log, running };
  }

  it('settles a tool that never resolves as error at its timeout, and aborts its signal', async () => {
    vi.useFakeTimers();
    const { tool, started } = hangingTool(50);
    const { log, running } = await startRun(tool);
    const context = await started.promise;
    await vi.advanceTimersByTimeAsync(49);
    expect(log.ofType('tool.settled')).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    await running;
    expect(context.signal.aborted).toBe(true);
    expect((context.signal.reason as DOMException).name).toBe('TimeoutError');
    expect(log.ofType('tool.settled')).toMatchObject([
      {
        outcome: 'error',
        text: 'The tool did not finish within its timeout of 50 ms and was abandoned. It may have partly run; inspect the current state before retrying.',
      },
    ]);
  });

  it("passes the run's abort signal to execute; a throw after it is cancelled", async () => {
    const started = deferred<void>();
    const tool = defineTool({
      description: 'Honours stop',
      inputSchema: z.object({}),
      execute: (_input, { signal }) =>
        new Promise<string>((_resolve, reject) => {
          signal.addEventListener('abort', () =>
            reject(new Error(`stopped: ${String(signal.reason)}`)),
          );
          started.resolve();
        }),
    });
    const { log, running } = await startRun(tool);
    await started.promise;
    log.controller.abort('user pressed stop');
    await running;
    expect(log.ofType('tool.settled')).toMatchObject([
      {
        outcome: 'cancelled',
        text: 'The run was stopped while this call was running; the tool ended with: stopped: user pressed stop. It may have partly run; inspect the current state before retrying.',
      },
    ]);
  });

  it('settles a tool that ignores the signal as unknown when the grace ends, and ignores its late result', async () => {
    vi.useFakeTimers();
    const { tool, started, finish } = hangingTool(60_000);
    const { log, running } = await startRun(tool, { stopGraceMs: 500 });
    const context = await started.promise;
    log.controller.abort('stop');
    expect(context.signal.aborted).toBe(true);
    await vi.advanceTimersByTimeAsync(499);
    expect(log.ofType('tool.settled')).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    await running;
    finish.resolve('late result');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(log.ofType('tool.settled')).toMatchObject([
      {
        outcome: 'unknown',
        text: 'The run was stopped while this call was running and the tool did not stop within 500 ms. Its outcome is unknown: it may or may not have run to completion. Inspect the current state before retrying.',
      },
    ]);
    expect(log.ofType('tool.settled')).toHaveLength(1);
  });

  it('does not start a call when the run was already stopped', async () => {
    const execute = vi.fn(() => 'ran');
    const tool = defineTool({ description: 'Any', inputSchema: z.object({}), execute });
    const log = createToolLog();
    log.controller.abort('stop');
    const runtime = createToolRuntime({ tools: { any: tool } });
    const call = provenCall('any', {});
    await runtime.run(call, allow(hashJson({})), await log.completeStep('step_1', [call]));
    expect(execute).toHaveBeenCalledTimes(0);
    expect(log.ofType('tool.settled')).toMatchObject([
      {
        outcome: 'cancelled',
        text: 'The run was stopped before this call started; it was not run.',
      },
    ]);
  });
});

describe('concurrency', () => {
  it('never executes more than toolConcurrency calls of a run at once', async () => {
    let active = 0;
    let maxActive = 0;
    const startedIds: number[] = [];
    const gates = new Map<number, ReturnType<typeof deferred<void>>>();
    let onStart = () => {};
    const tool = defineTool({
      description: 'Waits for its gate',
      inputSchema: z.object({ id: z.number() }),
      execute: async ({ id }) => {
        active += 1;
        maxActive = Math.max(maxActive, active);
        startedIds.push(id);
        onStart();
        await gates.get(id)?.promise;
        active -= 1;
        return id;
      },
    });
    const waitForStarts = (count: number) =>
      new Promise<void>((resolve) => {
        onStart = () => {
          if (startedIds.length >= count) resolve();
        };
        onStart();
      });
    const runtime = createToolRuntime({ tools: { gated: tool } });
    const log = createToolLog({ limits: { toolConcurrency: 2 } });
    const calls = [1, 2, 3, 4, 5, 6].map((id) => provenCall('gated', { id }, `call_${id}`));
    for (const call of calls) gates.set((call.input as { id: number }).id, deferred<void>());
    const context = await log.completeStep('step_1', calls);
    const runs = calls.map((call) => runtime.run(call, allow(hashJson(call.input)), context));

    await waitForStarts(2);
    await new Promise((resolve) => setImmediate(resolve));
    expect(startedIds).toEqual([1, 2]);
    gates.get(1)?.resolve();
    await waitForStarts(3);
    await new Promise((resolve) => setImmediate(resolve));
    expect(startedIds).toEqual([1, 2, 3]);
    for (const gate of gates.values()) gate.resolve();
    await Promise.all(runs);

    expect(maxActive).toBe(2);
    expect(startedIds).toHaveLength(6);
    expect(log.ofType('tool.settled').map((fact) => fact.outcome)).toEqual(
      Array(6).fill('success'),
    );
  });
});
