import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createCallSettler } from '../../tools/call-settler.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { idempotencyKey } from '../../tools/idempotency-key.ts';
import { createToolLog, provenCall, settleCall } from './helpers/tool-log.ts';

const ids = { sessionId: 'session_1', runId: 'run_1', stepId: 'step_1', callId: 'call_1' };

describe('idempotencyKey', () => {
  it('is turnlog- and 32 hex digits of the SHA-256 of the four ids', () => {
    expect(idempotencyKey(ids)).toMatch(/^turnlog-[0-9a-f]{32}$/);
    expect(idempotencyKey(ids)).toBe(idempotencyKey({ ...ids }));
  });

  it('differs when any one of the session, run, step or call ids differs', () => {
    const keys = new Set([
      idempotencyKey(ids),
      idempotencyKey({ ...ids, sessionId: 'session_2' }),
      idempotencyKey({ ...ids, runId: 'run_2' }),
      idempotencyKey({ ...ids, stepId: 'step_2' }),
      idempotencyKey({ ...ids, callId: 'call_2' }),
      // Ids are joined as a JSON array: moving a character between two ids changes the key.
      idempotencyKey({ ...ids, sessionId: 'session_1r', runId: 'un_1' }),
    ]);
    expect(keys.size).toBe(6);
  });

  it('reaches execute as context.idempotencyKey, derived from the call the settler runs', async () => {
    const seen: string[] = [];
    const charge = defineTool({
      description: 'Charge',
      inputSchema: z.object({ cents: z.number() }),
      execute: async (_input, { idempotencyKey: key }) => {
        seen.push(key);
        return 'charged';
      },
    });
    const settler = createCallSettler({ tools: { charge } });
    const log = createToolLog();
    const call = provenCall('charge', { cents: 500 });
    await log.completeStep('step_1', [call]);
    await settleCall(settler, log, 'step_1', call);
    expect(seen).toEqual([idempotencyKey(ids)]);
  });
});
