import { describe, expect, it } from 'vitest';
import { type AnyActorLogic, fromCallback } from 'xstate';
import { sequentialIds } from '../../events/ids.ts';
import { RunDriver } from '../../machines/effects/run-driver.ts';
import type { PreparedRequest, ProviderStepInput } from '../../machines/pure/actor-inputs.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { runStartedDraft, stepStartedDraft } from '../helpers/fact-builder.ts';
import { type ActorName, providedMachine } from '../helpers/provided-machine.ts';

const prepared: PreparedRequest = {
  system: 'Be brief.',
  messages: [{ role: 'user', content: 'hello' }],
  tools: [],
};

const stepStarted = stepStartedDraft();

/** A driver on a machine whose providerStep records its input; the other actors do nothing. */
async function driverWithProviderInputs(options: { inspect: boolean }) {
  const inputs: ProviderStepInput[] = [];
  const actorFor = (name: ActorName): AnyActorLogic =>
    name === 'providerStep'
      ? fromCallback(({ input }: { input: ProviderStepInput }) => {
          inputs.push(input);
        })
      : fromCallback(() => {});
  const store = memoryStore();
  const driver = new RunDriver({
    store,
    machine: providedMachine(actorFor),
    sessionId: 'session_1',
    turnId: 'turn_1',
    runId: 'run_1',
    facts: [],
    now: () => Date.UTC(2026, 0, 1),
    generateId: sequentialIds(),
    ...(options.inspect ? { inspect: () => {} } : {}),
  });
  await driver.begin(runStartedDraft() as Parameters<typeof driver.begin>[0]);
  return { driver, store, inputs };
}

describe('the prepared request reaches providerStep through the machine', () => {
  for (const inspect of [false, true]) {
    it(`on the step.started event, never in the log (${inspect ? 'sent to the actor' : 'held transition'})`, async () => {
      const { driver, store, inputs } = await driverWithProviderInputs({ inspect });
      expect(await driver.commit(stepStarted, prepared)).toBe(true);
      expect(inputs).toHaveLength(1);
      expect(inputs[0]).toMatchObject({ stepId: 'step_1', attempt: 1 });
      expect(inputs[0]?.request).toBe(prepared);
      const stored = (await store.read('session_1')).find((fact) => fact.type === 'step.started');
      expect(stored).toBeDefined();
      expect(stored).not.toHaveProperty('prepared');
      expect(driver.facts().at(-1)).not.toHaveProperty('prepared');
    });
  }

  it('leaves the request undefined for a step.started that carries none (the actor rebuilds it)', async () => {
    const { driver, inputs } = await driverWithProviderInputs({ inspect: false });
    expect(await driver.commit(stepStarted)).toBe(true);
    expect(inputs).toHaveLength(1);
    expect(inputs[0]?.request).toBeUndefined();
  });
});
