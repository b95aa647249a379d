import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import type { Fact, FactOf } from '../../events/facts.ts';
import { foldRun, ReplayDivergenceError } from '../../machines/pure/rehydrate.ts';
import { statePath } from '../../machines/pure/state-path.ts';
import { inputFromRunStarted } from '../../machines/pure/turn-context.ts';
import { turnMachine } from '../../machines/pure/turn-machine.ts';
import { sampleLogs } from '../helpers/sample-logs.ts';

const runIds = (facts: Fact[]) => [...new Set(facts.map((fact) => fact.runId))];

describe('foldRun', () => {
  for (const { name, facts } of sampleLogs()) {
    it(`rebuilds, for every prefix of ${name}, the snapshot a live machine reaches on the same facts`, () => {
      for (const runId of runIds(facts)) {
        const runFacts = facts.filter((fact) => fact.runId === runId);
        const runStarted = runFacts[0] as FactOf<'run.started'>;
        const liveActor = createActor(turnMachine, {
          input: inputFromRunStarted(runStarted),
        }).start();
        for (let length = 1; length <= runFacts.length; length += 1) {
          const fact = runFacts[length - 1] as Fact;
          if (length > 1 && fact.type !== 'run.ended') liveActor.send(fact);
          const { snapshot } = foldRun(
            facts.filter((candidate) => candidate.seq <= fact.seq),
            runId,
          );
          const live = liveActor.getSnapshot();
          expect(statePath(snapshot.value), `${name} seq ${fact.seq}`).toBe(statePath(live.value));
          expect(snapshot.context).toEqual(live.context);
          expect(snapshot.status).toBe(live.status);
          if (fact.state !== undefined) expect(statePath(snapshot.value)).toBe(fact.state);
        }
        const ended = runFacts.find((fact) => fact.type === 'run.ended');
        if (ended?.type === 'run.ended') {
          const { snapshot } = foldRun(facts, runId);
          expect(snapshot.status).toBe('done');
          expect(snapshot.output).toEqual({
            status: ended.status,
            reason: ended.reason,
            ...(ended.error === undefined ? {} : { error: ended.error }),
          });
        }
      }
    });
  }

  it('raises ReplayDivergenceError for a fact after the run reached terminal (steering the machine would take at its root)', () => {
    const { facts } = sampleLogs().find((log) => log.name === 'text-only') ?? { facts: [] };
    const [first, , , ended] = facts as [Fact, Fact, Fact, Fact];
    expect(ended).toMatchObject({ type: 'run.ended', seq: 4 });
    const late = {
      ...ended,
      id: 'late_steering',
      type: 'steering.received',
      messageId: 'message_late',
      text: 'and one more thing',
    } as unknown as Fact;
    const runId = first.runId;
    for (const log of [
      [...facts.slice(0, 3), { ...late, seq: 4 }],
      [...facts.slice(0, 4), { ...late, seq: 5 }],
    ]) {
      const error = (() => {
        try {
          foldRun(log, runId);
        } catch (caught) {
          return caught;
        }
      })();
      expect(ReplayDivergenceError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ seq: log.at(-1)?.seq, replayed: 'terminal' });
      expect((error as Error).message).toContain(
        '(steering.received) comes after the run reached terminal and ended',
      );
    }
  });

  it('raises ReplayDivergenceError for a fact the machine does not take in its state', () => {
    const { facts } = sampleLogs().find((log) => log.name === 'retry-429') ?? { facts: [] };
    const due = facts.find((fact) => fact.type === 'retry.due') as FactOf<'retry.due'>;
    // A retry.due for an attempt the machine did not schedule is not a transition of backingOff.
    const tampered = facts.map((fact) =>
      fact.seq === due.seq ? { ...due, attempt: 7, state: 'requesting.backingOff' } : fact,
    );
    expect(() => foldRun(tampered, due.runId)).toThrowError(
      `fact seq ${due.seq} (retry.due) is not a fact the turn machine takes in requesting.backingOff`,
    );
  });

  it('raises ReplayDivergenceError naming the seq whose recorded state disagrees', () => {
    const { facts } = sampleLogs().find((log) => log.name === 'multi-tool') ?? { facts: [] };
    const tampered = facts.map((fact) =>
      fact.seq === 4 ? { ...fact, state: 'projecting' } : fact,
    );
    const runId = facts[0]?.runId ?? '';
    expect(() => foldRun(tampered, runId)).toThrowError(ReplayDivergenceError);
    try {
      foldRun(tampered, runId);
    } catch (error) {
      expect(ReplayDivergenceError.isInstance(error)).toBe(true);
      expect((error as ReplayDivergenceError).seq).toBe(4);
      expect((error as ReplayDivergenceError).recorded).toBe('projecting');
      expect((error as Error).message).toContain('fact seq 4');
    }
  });
});
