import { describe, expect, it } from 'vitest';
import { createActor, fromCallback } from 'xstate';
import type { Fact, FactOf, ProposedFact } from '../../events/facts.ts';
import { heldTransition } from '../../machines/pure/pure-transition.ts';
import { statePath } from '../../machines/pure/state-path.ts';
import { inputFromRunStarted } from '../../machines/pure/turn-context.ts';
import { factBuilder, runStartedDraft, stepStartedDraft } from '../helpers/fact-builder.ts';
import { providedMachine } from '../helpers/provided-machine.ts';

/** A live turn machine whose actors record when they start and stop. */
function liveMachine() {
  const log: string[] = [];
  const record = (src: string) =>
    fromCallback(({ input }: { input: { phase?: string; callId?: string } }) => {
      const name = [src, input.phase, input.callId].filter(Boolean).join(':');
      log.push(`start ${name}`);
      return () => log.push(`stop ${name}`);
    });
  const machine = providedMachine(record);
  const fact = factBuilder();
  const runStarted = fact(runStartedDraft('hello')) as FactOf<'run.started'>;
  const actor = createActor(machine, { input: inputFromRunStarted(runStarted) }).start();
  return { actor, log, fact };
}

const usage = {
  inputTokens: 1,
  outputTokens: 1,
  reasoningTokens: undefined,
  cachedInputTokens: undefined,
};

/** A run of two tool steps, a stop while the second one's call runs, and its cancellation. */
const drafts: ProposedFact[] = [
  stepStartedDraft(),
  {
    type: 'step.completed',
    stepId: 'step_1',
    finishReason: { unified: 'tool-calls', raw: undefined },
    usage,
    content: [],
    toolCalls: [{ callId: 'c1', name: 'echo', input: {}, proof: 'raw-bytes' }],
    response: { id: 'r', modelId: 'm' },
  },
  {
    type: 'tool.permission.decided',
    callId: 'c1',
    decision: 'allow',
    inputHash: 'h1',
    by: 'policy',
  },
  { type: 'tool.started', callId: 'c1', name: 'echo', input: {}, inputHash: 'h1' },
  { type: 'steering.received', messageId: 'm1', text: 'also this' },
  {
    type: 'tool.settled',
    callId: 'c1',
    name: 'echo',
    outcome: 'success',
    text: 'ok',
    truncated: false,
  },
  {
    type: 'step.started',
    stepId: 'step_2',
    attempt: 1,
    request: {
      provider: 'test',
      modelId: 'm',
      messageCount: 3,
      tools: [],
      activeTools: undefined,
      inputHash: 'h',
    },
  },
  { type: 'run.stop.requested', reason: 'user' },
];

describe('heldTransition', () => {
  it('leaves the actor as it was until adopted, then as if the fact had been sent', () => {
    const sent = liveMachine();
    const held = liveMachine();
    for (const draft of drafts) {
      const fact = sent.fact(draft);
      held.fact(draft);
      const before = held.actor.getSnapshot();
      const logged = held.log.length;
      const transition = heldTransition(held.actor, before, fact);
      // Computed, not seen: same snapshot, no actor started or stopped yet.
      expect(held.actor.getSnapshot()).toBe(before);
      expect(held.log).toHaveLength(logged);
      sent.actor.send(fact);
      expect(transition.adopt(fact)).toBe(true);
      const [live, adopted] = [sent.actor.getSnapshot(), held.actor.getSnapshot()];
      expect(adopted).toBe(transition.snapshot);
      expect(statePath(adopted.value)).toBe(statePath(live.value));
      expect(adopted.context).toStrictEqual(live.context);
      expect(adopted.status).toBe(live.status);
      expect(Object.keys(adopted.children).sort()).toEqual(Object.keys(live.children).sort());
      expect(held.log).toEqual(sent.log);
    }
    expect(held.actor.getSnapshot().status).toBe('done');
    expect(held.log).toEqual([
      'start prepareStep',
      'stop prepareStep',
      'start providerStep',
      'stop providerStep',
      'start settleTool:run:c1',
      'stop settleTool:run:c1',
      'start prepareStep',
      'stop prepareStep',
      'start providerStep',
      'stop providerStep',
    ]);
  });

  it('refuses to adopt once the actor has moved, and never starts the children of a transition not adopted', () => {
    const { actor, log, fact } = liveMachine();
    actor.send(fact(drafts[0] as ProposedFact));
    const completed = fact(drafts[1] as ProposedFact) as Fact;
    const allowed = fact(drafts[2] as ProposedFact) as Fact;
    actor.send(completed);
    const stale = heldTransition(actor, actor.getSnapshot(), allowed);
    expect(Object.keys(stale.snapshot.children)).toContain('run:step_1:c1');
    actor.send(allowed);
    expect(stale.adopt(allowed)).toBe(false);
    // One runner: the one the sent fact started; the held transition's own never ran.
    expect(log.filter((line) => line === 'start settleTool:run:c1')).toHaveLength(1);
    actor.stop();
    const stopped = heldTransition(actor, actor.getSnapshot(), allowed);
    expect(stopped.adopt(allowed)).toBe(false);
  });
});
