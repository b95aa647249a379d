import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { classifyTerminal } from '../../events/classify-terminal.ts';
import type { Fact } from '../../events/facts.ts';
import { findDamage } from '../../events/find-damage.ts';
import { planRecovery } from '../../events/plan-recovery.ts';
import { projectHistory } from '../../events/project-history.ts';
import { projectTurn } from '../../events/project-turn.ts';
import { draft, logBuilder } from './log-builder.ts';
import {
  factsToText,
  loadSampleLog,
  parseFacts,
  sampleLogNames,
  sampleLogText,
} from './sample-logs.ts';

const machineStates = [
  'projecting',
  'compacting',
  'requesting.streaming',
  'requesting.backingOff',
  'settlingTools.deciding',
  'settlingTools.running',
  'settlingTools.reconciling',
  'settlingTools.stopping',
  'awaitingPermission',
  'terminal',
];

/** Every projection of a log, as JSON text (so `undefined` and a missing key compare equal). */
function allProjections(facts: readonly Fact[]): string {
  const runIds = [...new Set(facts.map((fact) => fact.runId))];
  const providers = [
    ...new Set(
      facts.flatMap((fact) => (fact.type === 'step.started' ? [fact.request.provider] : [])),
    ),
    'another.provider',
  ];
  return JSON.stringify({
    history: providers.map((provider) => projectHistory(facts, { provider })),
    turn: projectTurn(facts),
    recovery: planRecovery(facts),
    terminals: runIds.map((runId) => classifyTerminal(facts, { runId })),
  });
}

describe('the sample logs', () => {
  it('replays every frozen log in test/fixtures/logs, a log added later included', () => {
    const files = readdirSync(new URL('../fixtures/logs/', import.meta.url)).filter((file) =>
      file.endsWith('.jsonl'),
    );
    expect([...sampleLogNames].sort()).toStrictEqual(
      files.map((file) => file.replace(/\.jsonl$/, '')).sort(),
    );
  });
});

describe.each(sampleLogNames)('sample log %s', (name) => {
  const facts = loadSampleLog(name);

  it('is one session of complete facts, seq gapless from 1, ids unique, no damage', () => {
    expect(new Set(facts.map((fact) => fact.sessionId)).size).toBe(1);
    expect(facts.map((fact) => fact.seq)).toStrictEqual(facts.map((_, index) => index + 1));
    expect(new Set(facts.map((fact) => fact.id)).size).toBe(facts.length);
    expect(
      facts.every((fact) => typeof fact.at === 'string' && !Number.isNaN(Date.parse(fact.at))),
    ).toBe(true);
    expect(findDamage(facts)).toStrictEqual([]);
  });

  it('records a machine state on every fact, and ends each finished run with run.ended in terminal', () => {
    expect(facts.filter((fact) => !machineStates.includes(fact.state ?? ''))).toStrictEqual([]);
    for (const runId of new Set(facts.map((fact) => fact.runId))) {
      const run = facts.filter((fact) => fact.runId === runId);
      expect(run[0]?.type).toBe('run.started');
      const ended = run.findIndex((fact) => fact.type === 'run.ended');
      if (ended !== -1) {
        expect(ended).toBe(run.length - 1);
        expect(run[ended]?.state).toBe('terminal');
      }
    }
  });

  it('keeps runs sequential: no run has facts after the next run started', () => {
    const order = facts.map((fact) => fact.runId);
    const firstRunIds = order.filter((runId, index) => order.indexOf(runId) === index);
    const contiguous = firstRunIds.flatMap((runId) =>
      order.filter((candidate) => candidate === runId),
    );
    expect(order).toStrictEqual(contiguous);
  });

  it('round-trips: facts → JSON text → facts give the same text and identical projections', () => {
    const text = factsToText(facts);
    expect(text).toBe(sampleLogText(name));
    const reparsed = parseFacts(text);
    expect(reparsed).toStrictEqual(facts);
    expect(allProjections(reparsed)).toBe(allProjections(facts));
  });
});

describe('projection round trips of facts built in memory', () => {
  it('gives identical projections after JSON although undefined fields disappear from the text', () => {
    const log = logBuilder();
    log.startRun('go');
    log.add(draft.stepStarted('s1'), 'requesting.streaming');
    log.add(
      draft.stepCompleted('s1', {
        content: [{ type: 'reasoning', text: 'r', providerOptions: { test: { signature: 's' } } }],
        calls: [draft.call('c1'), draft.withheldCall('c2')],
        usage: { inputTokens: 3 },
      }),
      'settlingTools.deciding',
    );
    log.add(draft.settled('c2', 'not run', 'withheld'), 'settlingTools.deciding');
    log.add(draft.asked('c1', { a: 1 }), 'awaitingPermission');
    const reparsed = parseFacts(factsToText(log.facts));
    expect(JSON.stringify(reparsed)).toBe(JSON.stringify(log.facts));
    expect(reparsed).not.toStrictEqual(log.facts);
    expect(allProjections(reparsed)).toBe(allProjections(log.facts));
    expect(projectTurn(reparsed)).toEqual(projectTurn(log.facts));
    expect(projectHistory(reparsed, { provider: 'test.provider' })).toStrictEqual(
      projectHistory(log.facts, { provider: 'test.provider' }),
    );
  });
});
