import { describe, expect, it } from 'vitest';
import type { FactOf } from '../../events/facts.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { createFakeFetch } from '../helpers/fake-fetch.ts';
import { testRuntime } from '../runtime/runtime-helpers.ts';
import { bodyStrings, countedTools, faultRuntime, trace } from './fault-harness.ts';
import { providers, serve } from './provider-profiles.ts';

describe.each(providers)('output cut off at the token limit through $name', (profile) => {
  it(`a tool call in a response that finished ${profile.cutOffReason} is withheld, never run, and the model is told`, async () => {
    const { runtime, fake, executions } = faultRuntime(profile, [
      serve(profile.cutOff(profile.toolCall)),
      serve(profile.text),
    ]);
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });

    expect(await turn.done).toMatchObject({
      status: 'completed',
      reason: 'end_turn',
      steps: 2,
    });
    const facts = await runtime.facts('s1');
    expect(trace(facts)).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      `step.completed step_1 length [${profile.calls.map((call) => `${call.name}:withheld`).join(' ')}]`,
      ...profile.calls.map((call) => `tool.settled ${call.name} withheld`),
      'step.started step_2 attempt 1',
      'step.completed step_2 stop',
      'run.ended completed end_turn',
    ]);
    const completed = facts.find((fact) => fact.type === 'step.completed');
    expect(completed).toMatchObject({
      finishReason: { unified: 'length', raw: profile.cutOffReason },
    });
    expect(executions).toEqual([]);
    // The next request carries each withheld call's result: it was not run, and why.
    const settled = facts.filter((fact) => fact.type === 'tool.settled');
    const nextRequest = bodyStrings(fake.requests[1]?.body);
    expect(settled).toHaveLength(profile.calls.length);
    for (const fact of settled) {
      expect(fact.text).toMatch(
        /^This call was not run: the response finished with reason "length"/,
      );
      expect(nextRequest).toContain(fact.text);
    }
    expect(fake.requests).toHaveLength(2);
    await runtime.close();
  });

  it(`a final answer that finished ${profile.cutOffReason} fails the run as max_output_tokens: a cut answer is never completed`, async () => {
    const { runtime, fake } = faultRuntime(profile, [serve(profile.cutOff(profile.text))]);
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });

    expect(await turn.done).toMatchObject({
      status: 'failed',
      reason: 'max_output_tokens',
      steps: 1,
    });
    expect(trace(await runtime.facts('s1'))).toEqual([
      'run.started',
      'step.started step_1 attempt 1',
      'step.completed step_1 length',
      'run.ended failed max_output_tokens',
    ]);
    expect(fake.requests).toHaveLength(1);
    await runtime.close();
  });

  it('a call whose response claims a clean finish but used the whole output limit is withheld', async () => {
    const fake = createFakeFetch([serve(profile.toolCall), serve(profile.text)]);
    const { tools, executions } = countedTools();
    const runtime = testRuntime(memoryStore(), {
      model: profile.model(fake.fetch),
      tools,
      limits: { maxOutputTokens: profile.toolCallOutputTokens },
    });
    const turn = await runtime.send({ sessionId: 's1', text: 'go' });

    expect(await turn.done).toMatchObject({ status: 'completed', reason: 'end_turn' });
    const facts = await runtime.facts('s1');
    expect(trace(facts).slice(2, 3 + profile.calls.length)).toEqual([
      `step.completed step_1 tool-calls [${profile.calls.map((call) => `${call.name}:withheld`).join(' ')}]`,
      ...profile.calls.map((call) => `tool.settled ${call.name} withheld`),
    ]);
    const completed = facts.find(
      (fact) => fact.type === 'step.completed',
    ) as FactOf<'step.completed'>;
    expect(completed.usage.outputTokens).toBe(profile.toolCallOutputTokens);
    expect(completed.toolCalls.map((call) => call.withheld)).toEqual(
      profile.calls.map(
        () =>
          `This call was not run: the response used ${profile.toolCallOutputTokens} output tokens, reaching the ${profile.toolCallOutputTokens}-token limit, so it may have been cut off. If you still need it, call the tool again.`,
      ),
    );
    expect(executions).toEqual([]);
    expect(fake.requests[0]?.body).toMatchObject(
      profile.maxOutputTokensBody(profile.toolCallOutputTokens),
    );
    await runtime.close();
  });
});
