import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { hashJson } from '../../events/json.ts';
import { createCallSettler } from '../../tools/call-settler.ts';
import { defineTool } from '../../tools/define-tool.ts';
import type { PermissionPolicy } from '../../tools/tool.ts';
import { createToolLog, decideCall, decisionOf, provenCall } from './helpers/tool-log.ts';

function countingTool(permission: 'allow' | 'ask' | 'deny' = 'allow') {
  const execute = vi.fn(async ({ path }: { path: string }) => `read ${path}`);
  const tool = defineTool({
    description: 'Read a file',
    inputSchema: z.object({ path: z.string(), limit: z.number().int().positive().default(10) }),
    permission,
    execute,
  });
  return { tool, execute };
}

describe('callSettler.decide', () => {
  it('settles a call without proof as withheld with the guard reason, and decides nothing else', async () => {
    const { tool, execute } = countingTool();
    const runtime = createCallSettler({ tools: { read: tool } });
    const log = createToolLog();
    const call = {
      callId: 'call_1',
      name: 'read',
      input: { path: 'a.md' },
      proof: null,
      withheld: 'This call was not run: its arguments were cut off (finish reason length).',
    };
    await decideCall(runtime, call, await log.completeStep('step_1', [call]));
    expect(log.facts().slice(1)).toMatchObject([
      {
        id: 'step_1:call_1:settled',
        type: 'tool.settled',
        callId: 'call_1',
        name: 'read',
        outcome: 'withheld',
        text: 'This call was not run: its arguments were cut off (finish reason length).',
        truncated: false,
      },
    ]);
    expect(log.facts()).toHaveLength(2);
    expect(execute).toHaveBeenCalledTimes(0);
  });

  it('settles a call to an unknown tool as invalid, naming the available tools', async () => {
    const { tool } = countingTool();
    const runtime = createCallSettler({ tools: { read: tool, write: tool } });
    const log = createToolLog();
    const call = provenCall('delete', { path: 'a.md' });
    await decideCall(runtime, call, await log.completeStep('step_1', [call]));
    expect(log.ofType('tool.settled')).toMatchObject([
      {
        outcome: 'invalid',
        text: 'Unknown tool "delete"; the call was not run. Available tools: read, write.',
      },
    ]);
  });

  it('does not treat Object.prototype members as tools', async () => {
    const { tool } = countingTool();
    const runtime = createCallSettler({ tools: { read: tool } });
    const log = createToolLog();
    const call = provenCall('toString', {});
    await decideCall(runtime, call, await log.completeStep('step_1', [call]));
    expect(log.ofType('tool.settled')[0]?.outcome).toBe('invalid');
  });

  it('settles input missing a required field as invalid, naming the field without echoing values', async () => {
    const { tool, execute } = countingTool();
    const runtime = createCallSettler({ tools: { read: tool } });
    const log = createToolLog();
    const call = provenCall('read', { limit: -3, token: 'sk-secret-value-1234' });
    await decideCall(runtime, call, await log.completeStep('step_1', [call]));
    const [settled] = log.ofType('tool.settled');
    expect(settled?.outcome).toBe('invalid');
    expect(settled?.text).toBe(
      [
        'Invalid input for tool "read"; the call was not run. Fix these fields and call it again:',
        '- path: Invalid input: expected string, but it is missing',
        '- limit: Too small: expected number to be >0',
      ].join('\n'),
    );
    expect(settled?.text).not.toContain('-3');
    expect(settled?.text).not.toContain('sk-secret');
    expect(log.facts()).toHaveLength(2);
    expect(execute).toHaveBeenCalledTimes(0);
  });

  it('blanks long raw values out of custom issue messages', async () => {
    const tool = defineTool({
      description: 'Strict',
      inputSchema: z.object({
        key: z.string().refine((value) => value.startsWith('ok'), {
          error: (issue) => `key ${String(issue.input)} must start with "ok"`,
        }),
      }),
      execute: () => 'ok',
    });
    const runtime = createCallSettler({ tools: { strict: tool } });
    const log = createToolLog();
    const call = provenCall('strict', { key: 'sk-very-secret-key' });
    await decideCall(runtime, call, await log.completeStep('step_1', [call]));
    expect(log.ofType('tool.settled')[0]?.text).toBe(
      'Invalid input for tool "strict"; the call was not run. Fix these fields and call it again:\n- key: key [value] must start with "ok"',
    );
  });

  it('settles a schema that throws as error, without throwing', async () => {
    const tool = defineTool({
      description: 'Throwing schema',
      inputSchema: z.object({ n: z.number() }).transform((): { n: number } => {
        throw new Error('transform exploded');
      }),
      execute: () => 'ok',
    });
    const runtime = createCallSettler({ tools: { boom: tool } });
    const log = createToolLog();
    const call = provenCall('boom', { n: 1 });
    await decideCall(runtime, call, await log.completeStep('step_1', [call]));
    expect(log.ofType('tool.settled')).toMatchObject([
      {
        outcome: 'error',
        text: 'The input of tool "boom" could not be validated (its schema threw: transform exploded). The call was not run.',
      },
    ]);
  });

  it('commits an allow decision by policy, bound to the hash of the validated input', async () => {
    const { tool } = countingTool('allow');
    const runtime = createCallSettler({ tools: { read: tool } });
    const log = createToolLog();
    const call = provenCall('read', { path: 'a.md' });
    await decideCall(runtime, call, await log.completeStep('step_1', [call]));
    expect(log.facts().slice(1)).toMatchObject([
      {
        id: 'step_1:call_1:decided',
        type: 'tool.permission.decided',
        callId: 'call_1',
        decision: 'allow',
        by: 'policy',
        inputHash: hashJson({ path: 'a.md', limit: 10 }),
      },
    ]);
    expect(log.facts()).toHaveLength(2);
  });

  it('commits a permission request with the validated input and the reason', async () => {
    const tool = defineTool({
      description: 'Write',
      inputSchema: z.object({ path: z.string(), content: z.string().default('') }),
      permission: () => ({ verdict: 'ask', reason: 'writes a file' }),
      execute: () => 'ok',
    });
    const runtime = createCallSettler({ tools: { write: tool } });
    const log = createToolLog();
    const call = provenCall('write', { path: 'a.md' });
    await decideCall(runtime, call, await log.completeStep('step_1', [call]));
    expect(log.facts().slice(1)).toMatchObject([
      {
        id: 'step_1:call_1:requested',
        type: 'tool.permission.requested',
        callId: 'call_1',
        name: 'write',
        input: { path: 'a.md', content: '' },
        inputHash: hashJson({ path: 'a.md', content: '' }),
        reason: 'writes a file',
      },
    ]);
    expect(log.facts()).toHaveLength(2);
  });

  it('consults the policy after the tool permission, with the JSON input and the tool verdict', async () => {
    const { tool } = countingTool('allow');
    const seen: unknown[] = [];
    const policy: PermissionPolicy = (request) => {
      seen.push(request);
      return { verdict: 'deny', reason: 'no reads on Fridays' };
    };
    const runtime = createCallSettler({ tools: { read: tool }, policy });
    const log = createToolLog();
    const call = provenCall('read', { path: 'a.md' });
    await decideCall(runtime, call, await log.completeStep('step_1', [call]));
    expect(seen).toEqual([
      {
        name: 'read',
        input: { path: 'a.md', limit: 10 },
        toolVerdict: { verdict: 'allow' },
        sessionId: 'session_1',
      },
    ]);
    expect(decisionOf(log.facts(), 'call_1')).toEqual({
      decision: 'deny',
      inputHash: hashJson({ path: 'a.md', limit: 10 }),
      by: 'policy',
      reason: 'no reads on Fridays',
    });
  });

  it('records the validated input in the permission request even when the policy changes its copy', async () => {
    const { tool } = countingTool('ask');
    const policy: PermissionPolicy = ({ input }) => {
      (input as { path: string }).path = 'harmless.md';
      return undefined;
    };
    const runtime = createCallSettler({ tools: { read: tool }, policy });
    const log = createToolLog();
    const call = provenCall('read', { path: 'secrets.env' });
    await decideCall(runtime, call, await log.completeStep('step_1', [call]));
    expect(log.ofType('tool.permission.requested')).toMatchObject([
      {
        input: { path: 'secrets.env', limit: 10 },
        inputHash: hashJson({ path: 'secrets.env', limit: 10 }),
      },
    ]);
  });

  it("keeps the tool's verdict when the policy returns undefined", async () => {
    const { tool } = countingTool('ask');
    const runtime = createCallSettler({ tools: { read: tool }, policy: () => undefined });
    const log = createToolLog();
    const call = provenCall('read', { path: 'a.md' });
    await decideCall(runtime, call, await log.completeStep('step_1', [call]));
    expect(log.ofType('tool.permission.requested')).toHaveLength(1);
  });

  it('settles a throwing or nonsensical permission as error, without throwing', async () => {
    const throwing = defineTool({
      description: 'Throws in permission',
      inputSchema: z.object({}),
      permission: () => {
        throw new Error('policy store offline');
      },
      execute: () => 'ok',
    });
    const nonsense = defineTool({
      description: 'Returns nonsense',
      inputSchema: z.object({}),
      permission: () => 'yes' as never,
      execute: () => 'ok',
    });
    const runtime = createCallSettler({ tools: { throwing, nonsense } });
    const log = createToolLog();
    const calls = [provenCall('throwing', {}, 'call_1'), provenCall('nonsense', {}, 'call_2')];
    const context = await log.completeStep('step_1', calls);
    await Promise.all(calls.map((call) => decideCall(runtime, call, context)));
    const texts = Object.fromEntries(log.ofType('tool.settled').map((fact) => [fact.callId, fact]));
    expect(texts.call_1).toMatchObject({
      outcome: 'error',
      text: 'The permission check for this call failed (policy store offline); it was not run.',
    });
    expect(texts.call_2).toMatchObject({
      outcome: 'error',
      text: `The permission check for this call failed (the permission of tool "nonsense" returned "yes"; return 'allow', 'ask', 'deny' or { verdict, reason }); it was not run.`,
    });
  });

  it('returns the decision without committing anything (the step commits it)', async () => {
    const { tool } = countingTool();
    const runtime = createCallSettler({ tools: { read: tool } });
    const log = createToolLog();
    const call = provenCall('read', { path: 'a.md' });
    const context = await log.completeStep('step_1', [call]);
    const commit = vi.fn(context.commit);
    expect(await runtime.decide(call, { ...context, commit })).toStrictEqual({
      type: 'tool.permission.decided',
      id: 'step_1:call_1:decided',
      callId: 'call_1',
      decision: 'allow',
      inputHash: hashJson({ path: 'a.md', limit: 10 }),
      by: 'policy',
    });
    expect(commit).toHaveBeenCalledTimes(0);
    expect(log.facts().map((fact) => fact.type)).toEqual(['step.completed']);
  });

  it('deciding the same call twice commits one decision', async () => {
    const { tool } = countingTool();
    const runtime = createCallSettler({ tools: { read: tool } });
    const log = createToolLog();
    const call = provenCall('read', { path: 'a.md' });
    const context = await log.completeStep('step_1', [call]);
    await Promise.all([decideCall(runtime, call, context), decideCall(runtime, call, context)]);
    expect(log.ofType('tool.permission.decided')).toHaveLength(1);
  });
});
