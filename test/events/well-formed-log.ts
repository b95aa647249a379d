import fc from 'fast-check';
import type { ContentPart, Fact, ToolOutcome } from '../../events/facts.ts';
import { draft, logBuilder } from './log-builder.ts';

/**
 * A fast-check generator of well-formed session logs: sequential runs of steps with retries,
 * tool calls (asked, allowed, withheld, settled with any outcome, reused callIds across steps),
 * provider-executed tool calls (before or after the text; a result that succeeded, failed,
 * never came, or came in the next step),
 * steering at any point, compactions through any seq, and a last run that may be cut off in a
 * request or while its calls run. No damage: `findDamage` finds nothing in them.
 */

interface CallPlan {
  outcome: ToolOutcome;
  withheld: boolean;
  asks: boolean;
  steerWhileOpen: boolean;
}

/** A provider-executed tool call in the step's content, and where its result is. */
interface ProviderToolPlan {
  beforeText: boolean;
  result: 'success' | 'error' | 'none' | 'next-step';
}

interface StepPlan {
  provider: 'a.chat' | 'b.chat';
  failedAttempts: number;
  steerBefore: boolean;
  steerDuring: boolean;
  reasoning: boolean;
  text: boolean;
  calls: CallPlan[];
  providerTool: ProviderToolPlan | undefined;
  /** When set, a compaction through a seq picked from this fraction happens before the step. */
  compactBefore: number | undefined;
}

interface RunPlan {
  steps: StepPlan[];
  /** How the run ends if it is the last one; earlier runs always end. */
  cut: 'ended' | 'in-request' | 'in-tools';
}

const callPlan: fc.Arbitrary<CallPlan> = fc.record({
  outcome: fc.constantFrom<ToolOutcome>(
    'success',
    'error',
    'invalid',
    'denied',
    'cancelled',
    'unknown',
  ),
  withheld: fc.boolean(),
  asks: fc.boolean(),
  steerWhileOpen: fc.boolean(),
});

const stepPlan: fc.Arbitrary<StepPlan> = fc.record({
  provider: fc.constantFrom('a.chat' as const, 'b.chat' as const),
  failedAttempts: fc.integer({ min: 0, max: 2 }),
  steerBefore: fc.boolean(),
  steerDuring: fc.boolean(),
  reasoning: fc.boolean(),
  text: fc.boolean(),
  calls: fc.array(callPlan, { maxLength: 3 }),
  providerTool: fc.option(
    fc.record({
      beforeText: fc.boolean(),
      result: fc.constantFrom(
        'success' as const,
        'error' as const,
        'none' as const,
        'next-step' as const,
      ),
    }),
    { nil: undefined },
  ),
  compactBefore: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
});

const runPlan: fc.Arbitrary<RunPlan> = fc.record({
  steps: fc.array(stepPlan, { minLength: 1, maxLength: 4 }),
  cut: fc.constantFrom('ended' as const, 'in-request' as const, 'in-tools' as const),
});

/** Session logs built from random plans. */
export const wellFormedLog: fc.Arbitrary<Fact[]> = fc
  .array(runPlan, { minLength: 1, maxLength: 3 })
  .map(buildLog);

function buildLog(runs: RunPlan[]): Fact[] {
  const log = logBuilder();
  let stepNumber = 0;
  let steeringNumber = 0;
  const steer = () => {
    steeringNumber += 1;
    log.add(draft.steering(`steer ${steeringNumber}`));
  };

  runs.forEach((run, runIndex) => {
    const isLastRun = runIndex === runs.length - 1;
    const cut = isLastRun ? run.cut : 'ended';
    log.startRun(`input ${runIndex + 1}`);
    // A provider tool's result that arrives in the run's next completed step.
    let deferred: ContentPart[] = [];
    for (const [stepIndex, step] of run.steps.entries()) {
      const isLastStep = stepIndex === run.steps.length - 1;
      stepNumber += 1;
      const stepId = `step_${stepNumber}`;
      if (step.compactBefore !== undefined) {
        const throughSeq = Math.max(1, Math.floor(step.compactBefore * log.lastSeq));
        log.add(draft.compacted(`summary through ${throughSeq}`, throughSeq));
      }
      if (step.steerBefore) steer();
      for (let attempt = 1; attempt <= step.failedAttempts; attempt += 1) {
        log.add(draft.stepStarted(stepId, { provider: step.provider, attempt }));
        log.add(draft.stepFailed(stepId));
        log.add({ type: 'retry.due', stepId, attempt: attempt + 1 });
      }
      log.add(
        draft.stepStarted(stepId, { provider: step.provider, attempt: step.failedAttempts + 1 }),
      );
      if (step.steerDuring) steer();
      if (cut === 'in-request' && isLastStep) return;
      const content: ContentPart[] = deferred;
      deferred = [];
      const provider = providerToolParts(stepId, step.providerTool);
      if (step.providerTool?.result === 'next-step') deferred = provider.splice(1);
      if (step.providerTool?.beforeText) content.push(...provider);
      if (step.reasoning)
        content.push({
          type: 'reasoning',
          text: `thinking ${stepId}`,
          providerOptions: { a: { signature: stepId } },
        });
      if (step.text) content.push({ type: 'text', text: `text ${stepId}` });
      if (step.providerTool?.beforeText === false) content.push(...provider);
      const calls = step.calls.map((call, index) =>
        call.withheld ? draft.withheldCall(`call_${index}`) : draft.call(`call_${index}`),
      );
      log.add(draft.stepCompleted(stepId, { content, calls }));
      const interruptAt = cut === 'in-tools' && isLastStep ? step.calls.length - 1 : -1;
      for (const [index, call] of step.calls.entries()) {
        const callId = `call_${index}`;
        if (call.withheld) {
          log.add(draft.settled(callId, `withheld ${stepId}/${callId}`, 'withheld'));
          continue;
        }
        if (call.asks) log.add(draft.asked(callId));
        log.add(draft.allowed(callId));
        log.add(draft.started(callId));
        if (call.steerWhileOpen) steer();
        if (index === interruptAt) return;
        log.add(draft.settled(callId, `result ${stepId}/${callId}`, call.outcome));
      }
    }
    if (cut === 'ended') log.add(draft.ended());
  });
  return log.facts;
}

/** A provider-executed call (and its result) as `step.completed` content. */
function providerToolParts(stepId: string, plan: ProviderToolPlan | undefined): ContentPart[] {
  if (plan === undefined) return [];
  const callId = `srv_${stepId}`;
  const call: ContentPart = {
    type: 'provider-tool-call',
    callId,
    name: 'webSearch',
    input: { query: `query ${stepId}` },
    providerOptions: { a: { itemId: callId } },
  };
  if (plan.result === 'none') return [call];
  const isError = plan.result === 'error';
  return [
    call,
    {
      type: 'provider-tool-result',
      callId,
      name: 'webSearch',
      result: isError ? { errorCode: 'unavailable' } : [{ url: `https://example.com/${stepId}` }],
      isError,
      providerOptions: { a: { itemId: callId } },
    },
  ];
}
