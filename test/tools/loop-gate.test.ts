import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { Fact, ProposedFact, ToolOutcome } from '../../events/facts.ts';
import { hashJson } from '../../events/json.ts';
import { createCallSettler } from '../../tools/call-settler.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { createLoopGate } from '../../tools/loop-gate.ts';
import type { StandardSchemaV1 } from '../../tools/tool.ts';
import { factBuilder } from '../helpers/fact-builder.ts';
import { createToolLog, decideCall, decisionOf, provenCall } from './helpers/tool-log.ts';

/** Facts of one step whose single call of `name` started with `input` and settled `outcome`. */
function stepFacts(
  build: (draft: ProposedFact) => Fact,
  stepId: string,
  name: string,
  input: Record<string, string>,
  outcome: ToolOutcome,
): Fact[] {
  const call = { callId: 'call_1', name, input, proof: 'raw-bytes' as const };
  const inputHash = hashJson(input);
  const facts = [
    build({
      type: 'step.completed',
      stepId,
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage: {
        inputTokens: 1,
        outputTokens: 1,
        reasoningTokens: undefined,
        cachedInputTokens: undefined,
      },
      content: [],
      toolCalls: [call],
      response: { id: undefined, modelId: undefined },
    }),
  ];
  if (outcome !== 'invalid') {
    facts.push(
      build({
        type: 'tool.permission.decided',
        callId: 'call_1',
        decision: 'allow',
        inputHash,
        by: 'policy',
      }),
      build({ type: 'tool.started', callId: 'call_1', name, input, inputHash }),
    );
  }
  facts.push(
    build({
      type: 'tool.settled',
      callId: 'call_1',
      name,
      outcome,
      text: outcome,
      truncated: false,
    }),
  );
  return facts;
}

/** A fresh gate's answer: it reads `facts` from the start. */
const isRepeatedFailure = (
  question: Parameters<ReturnType<typeof createLoopGate>['isRepeatedFailure']>[0],
) => createLoopGate().isRepeatedFailure(question);

describe('isRepeatedFailure', () => {
  const input = { command: 'make' };
  const inputHash = hashJson(input);

  it('is true after two identical failures in a row (error, then invalid)', () => {
    const build = factBuilder();
    const facts = [
      ...stepFacts(build, 'step_1', 'run', input, 'error'),
      ...stepFacts(build, 'step_2', 'run', input, 'invalid'),
    ];
    expect(isRepeatedFailure({ facts, runId: 'run_1', name: 'run', inputHash })).toBe(true);
  });

  it('is false after one failure, or when the latest identical call succeeded', () => {
    const build = factBuilder();
    const one = stepFacts(build, 'step_1', 'run', input, 'error');
    expect(isRepeatedFailure({ facts: one, runId: 'run_1', name: 'run', inputHash })).toBe(false);
    const facts = [
      ...one,
      ...stepFacts(build, 'step_2', 'run', input, 'error'),
      ...stepFacts(build, 'step_3', 'run', input, 'success'),
    ];
    expect(isRepeatedFailure({ facts, runId: 'run_1', name: 'run', inputHash })).toBe(false);
  });

  it('is false when a different input came in between (only consecutive calls count)', () => {
    const build = factBuilder();
    const facts = [
      ...stepFacts(build, 'step_1', 'run', input, 'error'),
      ...stepFacts(build, 'step_2', 'run', { command: 'ls' }, 'error'),
      ...stepFacts(build, 'step_3', 'run', input, 'error'),
    ];
    expect(isRepeatedFailure({ facts, runId: 'run_1', name: 'run', inputHash })).toBe(false);
  });

  it('ignores other tools and other runs', () => {
    const build = factBuilder();
    const otherRun = factBuilder({ runId: 'run_0' });
    const facts = [
      ...stepFacts(otherRun, 'step_0', 'run', input, 'error'),
      ...stepFacts(build, 'step_1', 'run', input, 'error'),
      ...stepFacts(build, 'step_2', 'other', input, 'error'),
    ];
    expect(isRepeatedFailure({ facts, runId: 'run_1', name: 'run', inputHash })).toBe(false);
    expect(isRepeatedFailure({ facts, runId: 'run_0', name: 'run', inputHash })).toBe(false);
  });

  it('does not count denied, withheld, cancelled or unknown as failures', () => {
    for (const outcome of ['denied', 'withheld', 'cancelled', 'unknown'] as const) {
      const build = factBuilder();
      const facts = [
        ...stepFacts(build, 'step_1', 'run', input, outcome),
        ...stepFacts(build, 'step_2', 'run', input, outcome),
      ];
      expect(isRepeatedFailure({ facts, runId: 'run_1', name: 'run', inputHash })).toBe(false);
    }
  });
});

describe('a loop gate reading a log as it grows', () => {
  const plannedStep = fc.record({
    name: fc.constantFrom('make', 'test'),
    input: fc.constantFrom({ target: 'all' }, { target: 'clean' }),
    outcome: fc.constantFrom<ToolOutcome>('success', 'error', 'invalid', 'denied', 'cancelled'),
  });

  it('answers at every prefix what a gate reading that prefix at once answers', () => {
    fc.assert(
      fc.property(fc.array(plannedStep, { maxLength: 12 }), (steps) => {
        const build = factBuilder();
        const grown: Fact[] = [];
        const gate = createLoopGate();
        steps.forEach((step, index) => {
          grown.push(...stepFacts(build, `step_${index}`, step.name, step.input, step.outcome));
          for (const name of ['make', 'test']) {
            for (const candidate of [{ target: 'all' }, { target: 'clean' }]) {
              const question = { runId: 'run_1', name, inputHash: hashJson(candidate) };
              expect(gate.isRepeatedFailure({ facts: grown, ...question })).toBe(
                isRepeatedFailure({ facts: [...grown], ...question }),
              );
            }
          }
        });
      }),
      { numRuns: 200 },
    );
  });

  it('reads a different array of the same length from the start', () => {
    const input = { command: 'make' };
    const inputHash = hashJson(input);
    const failing = factBuilder();
    const passing = factBuilder();
    const failed = [
      ...stepFacts(failing, 'step_1', 'run', input, 'error'),
      ...stepFacts(failing, 'step_2', 'run', input, 'error'),
    ];
    const passed = [
      ...stepFacts(passing, 'step_1', 'run', input, 'success'),
      ...stepFacts(passing, 'step_2', 'run', input, 'success'),
    ];
    const gate = createLoopGate();
    const question = { runId: 'run_1', name: 'run', inputHash };
    expect(gate.isRepeatedFailure({ facts: failed, ...question })).toBe(true);
    expect(gate.isRepeatedFailure({ facts: passed, ...question })).toBe(false);
    // The same array, rewritten in place after it was read: read again from the start.
    failed.splice(0, failed.length, ...passed);
    expect(gate.isRepeatedFailure({ facts: failed, ...question })).toBe(false);
  });
});

describe('the loop gate in the tool runtime', () => {
  it('refuses a third identical failing call without running it', async () => {
    const execute = vi.fn(() => {
      throw new Error('make: *** No rule to make target');
    });
    const tool = defineTool({
      description: 'Run make',
      inputSchema: z.object({ target: z.string() }),
      execute,
    });
    const runtime = createCallSettler({ tools: { make: tool } });
    const log = createToolLog();
    for (const stepId of ['step_1', 'step_2', 'step_3']) {
      const call = provenCall('make', { target: 'all' });
      await log.completeStep(stepId, [call]);
      await decideCall(runtime, call, log.context(stepId));
      const decision = decisionOf(
        log.facts().filter((fact) => fact.id.startsWith(stepId)),
        'call_1',
      );
      if (decision !== undefined) await runtime.run(call, decision, log.context(stepId));
    }
    expect(execute).toHaveBeenCalledTimes(2);
    expect(log.ofType('tool.settled').map((fact) => fact.outcome)).toEqual([
      'error',
      'error',
      'denied',
    ]);
    expect(log.ofType('tool.settled')[2]?.text).toBe(
      'This exact call to "make" failed twice in a row, so it was not run a third time. Change your approach: different input, another tool, or ask the user.',
    );
  });

  it('keeps refusing the identical call after its first refusal, until a different input runs', async () => {
    const execute = vi.fn((_input: { target: string }) => {
      throw new Error('make: *** No rule to make target');
    });
    const tool = defineTool({
      description: 'Run make',
      inputSchema: z.object({ target: z.string() }),
      execute,
    });
    const runtime = createCallSettler({ tools: { make: tool } });
    const log = createToolLog();
    const targets = ['all', 'all', 'all', 'all', 'all', 'clean', 'all'];
    for (const [index, target] of targets.entries()) {
      const stepId = `step_${index + 1}`;
      const call = provenCall('make', { target });
      await log.completeStep(stepId, [call]);
      await decideCall(runtime, call, log.context(stepId));
      const decision = decisionOf(
        log.facts().filter((fact) => fact.id.startsWith(`${stepId}:`)),
        'call_1',
      );
      if (decision !== undefined) await runtime.run(call, decision, log.context(stepId));
    }
    expect(log.ofType('tool.settled').map((fact) => fact.outcome)).toEqual([
      'error',
      'error',
      'denied',
      'denied',
      'denied',
      'error',
      'error',
    ]);
    expect(execute.mock.calls.map(([input]) => input)).toEqual([
      { target: 'all' },
      { target: 'all' },
      { target: 'clean' },
      { target: 'all' },
    ]);
  });

  it('joins earlier invalid calls by the hash of their raw input', async () => {
    let accepting = false;
    const schema: StandardSchemaV1<unknown, { path: string }> = {
      '~standard': {
        version: 1,
        vendor: 'test',
        validate: (value) =>
          accepting
            ? { value: value as { path: string } }
            : { issues: [{ message: 'not yet', path: ['path'] }] },
      },
    };
    const execute = vi.fn(() => 'ran');
    const tool = defineTool({ description: 'Flaky schema', inputSchema: schema, execute });
    const runtime = createCallSettler({ tools: { flaky: tool } });
    const log = createToolLog();
    for (const stepId of ['step_1', 'step_2', 'step_3']) {
      if (stepId === 'step_3') accepting = true;
      const call = provenCall('flaky', { path: 'a.md' });
      await log.completeStep(stepId, [call]);
      await decideCall(runtime, call, log.context(stepId));
    }
    expect(log.ofType('tool.settled').map((fact) => fact.outcome)).toEqual([
      'invalid',
      'invalid',
      'denied',
    ]);
    expect(execute).toHaveBeenCalledTimes(0);
  });
});
