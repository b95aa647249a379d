import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { hashJson } from '../../events/json.ts';
import { createCallSettler } from '../../tools/call-settler.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { createToolLog, provenCall, settleCall } from './helpers/tool-log.ts';

describe('results', () => {
  it('truncates long output with the marker and keeps no output value', async () => {
    const tool = defineTool({
      description: 'Loud',
      inputSchema: z.object({}),
      execute: () => 'x'.repeat(50_000),
    });
    const runtime = createCallSettler({ tools: { loud: tool } });
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
    const runtime = createCallSettler({ tools: { api: tool } });
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

  it('settles throws of non-errors as error with their JSON or text, without throwing', async () => {
    const tool = defineTool({
      description: 'Misbehaves',
      inputSchema: z.object({ kind: z.enum(['object', 'number']) }),
      execute: ({ kind }) => {
        throw kind === 'object' ? { code: 'E_BAD' } : 42;
      },
    });
    const runtime = createCallSettler({ tools: { bad: tool } });
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
    const runtime = createCallSettler({ tools: { slow: tool }, now: () => clock });
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
    const runtime = createCallSettler({ tools: { any: tool } });
    const log = createToolLog();
    const call = provenCall('any', {});
    const context = await log.completeStep('step_1', [call]);
    await runtime.run(call, { ...decision, inputHash: hashJson({}) }, context);
    expect(execute).toHaveBeenCalledTimes(0);
    expect(log.ofType('tool.settled')).toMatchObject([{ outcome, text }]);
  });

  it('says an aborted call may have partly run when it had started', async () => {
    const tool = defineTool({ description: 'Any', inputSchema: z.object({}), execute: () => 'x' });
    const runtime = createCallSettler({ tools: { any: tool } });
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
    const runtime = createCallSettler({ tools: { any: tool } });
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
