import { describe, expect, it } from 'vitest';
import type { PendingDecision } from '../../events/run-facts.ts';
import { TurnlogError } from '../../events/turnlog-error.ts';
import {
  DecisionConflictError,
  DecisionMismatchError,
  evaluatePermission,
  InvalidDecisionError,
  PermissionVerdictError,
  UnknownDecisionError,
  validateDecision,
} from '../../tools/permission-policy.ts';
import type { PermissionPolicy, ToolPermission } from '../../tools/tool.ts';

function evaluate(permission: ToolPermission<{ path: string }>, policy?: PermissionPolicy) {
  return evaluatePermission({
    name: 'writeFile',
    tool: { permission },
    input: { path: 'a.md' },
    jsonInput: { path: 'a.md' },
    sessionId: 'session_1',
    policy,
  });
}

describe('evaluatePermission', () => {
  it("takes the tool's verdict as it is", async () => {
    expect(await evaluate('allow')).toEqual({ verdict: 'allow' });
    expect(await evaluate('ask')).toEqual({ verdict: 'ask' });
    expect(await evaluate('deny')).toEqual({ verdict: 'deny' });
  });

  it('calls a permission function with the input, sync or async, with or without a reason', async () => {
    expect(await evaluate(({ path }) => (path.endsWith('.md') ? 'allow' : 'ask'))).toEqual({
      verdict: 'allow',
    });
    expect(await evaluate(async () => ({ verdict: 'deny', reason: 'read-only checkout' }))).toEqual(
      {
        verdict: 'deny',
        reason: 'read-only checkout',
      },
    );
  });

  it('lets the policy override the tool verdict, or keep it by returning undefined', async () => {
    expect(
      await evaluate('ask', ({ name }) => (name === 'writeFile' ? 'allow' : undefined)),
    ).toEqual({
      verdict: 'allow',
    });
    expect(await evaluate('deny', async () => undefined)).toEqual({ verdict: 'deny' });
    expect(
      await evaluate('allow', ({ toolVerdict }) => ({
        verdict: 'ask',
        reason: `tool said ${toolVerdict.verdict}`,
      })),
    ).toEqual({ verdict: 'ask', reason: 'tool said allow' });
  });

  it('throws PermissionVerdictError for something that is not a verdict', async () => {
    await expect(evaluate(() => 'yes' as never)).rejects.toSatisfy(
      PermissionVerdictError.isInstance,
    );
    await expect(evaluate('allow', () => ({ verdict: 'ok' }) as never)).rejects.toThrow(
      `the permission policy (for tool "writeFile") returned {"verdict":"ok"}; return 'allow', 'ask', 'deny' or { verdict, reason }`,
    );
  });
});

describe('validateDecision', () => {
  const pending: PendingDecision[] = [
    {
      kind: 'permission',
      callId: 'call_1',
      name: 'writeFile',
      input: { path: 'a.md' },
      inputHash: 'sha256:aaa',
    },
    {
      kind: 'indeterminate',
      callId: 'call_2',
      name: 'runCommand',
      input: { command: 'make' },
      inputHash: 'sha256:bbb',
    },
  ];

  it('applies a fitting decision, with or without the input hash', () => {
    expect(
      validateDecision({ pending, decision: { callId: 'call_1', decision: 'allow' } }),
    ).toEqual({
      status: 'apply',
      pending: pending[0],
      inputHash: 'sha256:aaa',
    });
    expect(
      validateDecision({
        pending,
        decision: { callId: 'call_1', decision: 'deny', inputHash: 'sha256:aaa' },
      }),
    ).toMatchObject({ status: 'apply', inputHash: 'sha256:aaa' });
    expect(
      validateDecision({ pending, decision: { callId: 'call_1', decision: 'abort' } }).status,
    ).toBe('apply');
    expect(
      validateDecision({ pending, decision: { callId: 'call_2', decision: 'report-unknown' } })
        .status,
    ).toBe('apply');
    expect(
      validateDecision({ pending, decision: { callId: 'call_2', decision: 'abort' } }).status,
    ).toBe('apply');
  });

  it('refuses a decision for a call with no pending request', () => {
    let caught: unknown;
    try {
      validateDecision({ pending, decision: { callId: 'call_9', decision: 'allow' } });
    } catch (error) {
      caught = error;
    }
    expect(UnknownDecisionError.isInstance(caught)).toBe(true);
    expect(TurnlogError.isTurnlogError(caught)).toBe(true);
    expect((caught as UnknownDecisionError).callId).toBe('call_9');
    expect((caught as Error).message).toBe(
      'No decision is pending for call "call_9"; pending calls: "call_1", "call_2". Read runtime.pending(sessionId) for the open decisions',
    );
  });

  it('refuses a decision bound to another input hash', () => {
    let caught: unknown;
    try {
      validateDecision({
        pending,
        decision: { callId: 'call_1', decision: 'allow', inputHash: 'sha256:zzz' },
      });
    } catch (error) {
      caught = error;
    }
    expect(DecisionMismatchError.isInstance(caught)).toBe(true);
    expect(caught).toMatchObject({
      name: 'DecisionMismatchError',
      callId: 'call_1',
      expectedInputHash: 'sha256:aaa',
      actualInputHash: 'sha256:zzz',
    });
  });

  it('refuses allow or deny for an indeterminate call and report-unknown for a permission request', () => {
    for (const decision of ['allow', 'deny'] as const) {
      expect(() => validateDecision({ pending, decision: { callId: 'call_2', decision } })).toThrow(
        `Call "call_2" is indeterminate: it started and may have run, so it is never run again; decide 'report-unknown' (the model is told the outcome is unknown) or 'abort'`,
      );
    }
    expect(() =>
      validateDecision({ pending, decision: { callId: 'call_1', decision: 'report-unknown' } }),
    ).toThrow(InvalidDecisionError);
  });

  it('reports a repeated identical decision as a no-op and a different one as a conflict', () => {
    const decided = [
      {
        callId: 'call_3',
        decision: 'allow' as const,
        inputHash: 'sha256:ccc',
        by: 'user' as const,
      },
    ];
    expect(
      validateDecision({ pending, decided, decision: { callId: 'call_3', decision: 'allow' } }),
    ).toEqual({
      status: 'no-op',
      previous: decided[0],
    });
    expect(
      validateDecision({
        pending,
        decided,
        decision: { callId: 'call_3', decision: 'allow', inputHash: 'sha256:ccc' },
      }).status,
    ).toBe('no-op');
    expect(() =>
      validateDecision({ pending, decided, decision: { callId: 'call_3', decision: 'deny' } }),
    ).toThrow(DecisionConflictError);
    expect(() =>
      validateDecision({
        pending,
        decided,
        decision: { callId: 'call_3', decision: 'allow', inputHash: 'sha256:x' },
      }),
    ).toThrow(
      `Call "call_3" was already decided 'allow'; a decision cannot be changed once it is in the log`,
    );
  });
});
