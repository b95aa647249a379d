import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { hashJson } from '../../events/json.ts';
import { createCallSettler } from '../../tools/call-settler.ts';
import { defineTool } from '../../tools/define-tool.ts';
import {
  allowDecision as allow,
  createToolLog,
  provenCall,
  settleCall,
} from './helpers/tool-log.ts';

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
    const runtime = createCallSettler({ tools: { derived: tool } });
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
    const runtime = createCallSettler({ tools: { once: tool } });
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
    const runtime = createCallSettler({ tools: { once: tool } });
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
    const first = createCallSettler({ tools: { once: tool } });
    const second = createCallSettler({ tools: { once: tool } });
    const log = createToolLog();
    const call = provenCall('once', { n: 1 });
    const context = await log.completeStep('step_1', [call]);
    const decision = allow(hashJson({ n: 1 }));
    await Promise.all([first.run(call, decision, context), second.run(call, decision, context)]);
    expect(execute).toHaveBeenCalledTimes(1);
  });

  it('the same callId in two steps executes once per step', async () => {
    const { tool, execute } = onceTool();
    const runtime = createCallSettler({ tools: { once: tool } });
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
    const runtime = createCallSettler({ tools: { once: tool } });
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
    const runtime = createCallSettler({ tools: { once: tool } });
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
    const runtime = createCallSettler({ tools: { once: tool } });
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
    const runtime = createCallSettler({ tools: { look: tool } });
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

describe('a start the response recorded (decideStep)', () => {
  function countingTool() {
    const execute = vi.fn(async ({ n }: { n: number }) => n + 1);
    const tool = defineTool({
      description: 'Once',
      inputSchema: z.object({ n: z.number() }),
      execute,
    });
    return { runtime: createCallSettler({ tools: { once: tool } }), execute };
  }

  /** Commits a step's response as the provider step does: its decisions and starts in one write. */
  async function respond(
    runtime: ReturnType<typeof createCallSettler>,
    call = provenCall('once', { n: 1 }),
  ) {
    const log = createToolLog();
    const context = await log.completeStep('step_1', [call]);
    await log.commitAll(await runtime.decideStep([call], context));
    return { log, call, decision: allow(hashJson({ n: 1 })) };
  }

  it('is executed on by run, which commits no second tool.started', async () => {
    const { runtime, execute } = countingTool();
    const { log, call, decision } = await respond(runtime);
    expect(log.facts().map((fact) => fact.type)).toEqual([
      'step.completed',
      'tool.permission.decided',
      'tool.started',
    ]);
    await runtime.run(call, decision, log.context('step_1'));
    expect(execute).toHaveBeenCalledTimes(1);
    expect(log.ofType('tool.started')).toHaveLength(1);
    expect(log.ofType('tool.settled')).toMatchObject([{ outcome: 'success' }]);
    // Settled: running it again executes nothing.
    await runtime.run(call, decision, log.context('step_1'));
    expect(execute).toHaveBeenCalledTimes(1);
  });

  it('is settled cancelled, never executed, when the run stopped before execute', async () => {
    const { runtime, execute } = countingTool();
    const { log, call, decision } = await respond(runtime);
    log.controller.abort();
    await runtime.run(call, decision, log.context('step_1'));
    expect(execute).toHaveBeenCalledTimes(0);
    expect(log.ofType('tool.settled')).toMatchObject([{ outcome: 'cancelled' }]);
  });

  it('is never executed on after a recovery (I8: the call is indeterminate)', async () => {
    const { runtime, execute } = countingTool();
    const { log, call, decision } = await respond(runtime);
    await log.commit({
      type: 'run.recovered',
      interrupted: 'settlingTools.running',
      indeterminate: ['call_1'],
    });
    await runtime.run(call, decision, log.context('step_1'));
    expect(execute).toHaveBeenCalledTimes(0);
    expect(log.ofType('tool.started')).toHaveLength(1);
  });
});
