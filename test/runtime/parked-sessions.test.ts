import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { describe, expect, it } from 'vitest';
import { type ScriptedResponse, scriptedModel } from '../../adapters/scripted-model.ts';
import type { TurnResult } from '../../machines/effects/turn-channel.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { calibrate, scaled } from '../helpers/calibration.ts';
import { addTool, isFactOf, testRuntime, until } from './runtime-helpers.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Heap in use after full collections, letting finalizers (AbortSignal.any's cleanup) run between them. */
async function heapAfterGc(): Promise<number> {
  for (let round = 0; round < 4; round += 1) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return process.memoryUsage().heapUsed;
}

/** Asks to add on the first request of a session, answers once the result is in the prompt. */
const step = (call: LanguageModelV4CallOptions): ScriptedResponse =>
  JSON.stringify(call.prompt).includes('tool-result')
    ? { text: 'Three.' }
    : { toolCalls: [{ name: 'add', input: { a: 1, b: 2 } }] };

// 1,100 sessions parked and decided, about 5 ms of CPU each (linear: measured 4.7 ms at 200 and
// 5.0 ms at 1,000): a fixed amount of work, whose time bound scales with how loaded the machine
// is (at load 14 it took more than the fixed 30 s).
const { slowdown } = calibrate();

describe('many sessions parked in awaitingPermission', () => {
  it(
    'cost well under 10 KB each, log included, and each resumes when decided',
    async () => {
      const warmUp = 100;
      const sessions = 1_000;
      const { tool, executions } = addTool('ask');
      const model = scriptedModel(step);
      const runtime = testRuntime(memoryStore(), { model, tools: { add: tool } });
      const done: Promise<TurnResult>[] = [];
      const park = async (from: number, count: number) => {
        for (let index = from; index < from + count; index += 1) {
          const turn = await runtime.send({ sessionId: `s${index}`, text: 'add' });
          await until(turn, isFactOf('tool.permission.requested'));
          // A server keeps what it awaits; the handle itself (and its buffered events) is dropped.
          done.push(turn.done);
        }
        model.requests.length = 0; // the scripted model's own record, not the runtime's memory
      };
      // Warm up every code path (and the JIT), so the measurement is of sessions, not of code.
      await park(0, warmUp);
      const before = await heapAfterGc();
      await park(warmUp, sessions);
      const perSession = ((await heapAfterGc()) - before) / sessions;
      // Measured here: about 4 KB, of which about 3 KB are the session's 4 facts in the memory
      // store; the runtime keeps only the run's `done` resolvers (no actor, no timer).
      expect(perSession).toBeLessThan(10 * 1024);
      expect(executions).toHaveLength(0);

      for (let index = 0; index < warmUp + sessions; index += 1) {
        const pending = await runtime.pending(`s${index}`);
        expect(pending).toHaveLength(1);
        await runtime.decide({
          sessionId: `s${index}`,
          callId: pending[0]?.callId ?? '',
          decision: 'allow',
        });
      }
      const results = await Promise.all(done);
      expect(
        results.filter((result) => result.status === 'completed' && result.text === 'Three.'),
      ).toHaveLength(warmUp + sessions);
      expect(executions).toHaveLength(warmUp + sessions);
      await runtime.close();
    },
    scaled(30_000, slowdown),
  );
});
