import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { hashJson } from '../../events/json.ts';
import { createCallSettler } from '../../tools/call-settler.ts';
import { defineTool } from '../../tools/define-tool.ts';
import type { SettleContext, Tool, ToolExecuteContext } from '../../tools/tool.ts';
import { allowDecision as allow, createToolLog, deferred, provenCall } from './helpers/tool-log.ts';

afterEach(() => {
  vi.useRealTimers();
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
    const runtime = createCallSettler({ tools: { hang: tool } });
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
    const runtime = createCallSettler({ tools: { any: tool } });
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
    const runtime = createCallSettler({ tools: { gated: tool } });
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
