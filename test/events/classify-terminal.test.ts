import { describe, expect, it } from 'vitest';
import { classifyTerminal } from '../../events/classify-terminal.ts';
import { ProjectionInputError } from '../../events/projection-input-error.ts';
import { TurnlogError } from '../../events/turnlog-error.ts';
import { draft, logBuilder } from './log-builder.ts';
import { factAt, loadSampleLog } from './sample-logs.ts';

describe('classifyTerminal', () => {
  it.each([
    ['multi-tool', 12],
    ['steering', 10],
    ['recovered-tool', 15],
    ['retry-429', 7],
    ['stop', 8],
  ] as const)('finds the single run.ended of %s (a one-run log) at seq %i', (name, seq) => {
    const facts = loadSampleLog(name);
    expect(classifyTerminal(facts)).toStrictEqual({
      kind: 'ended',
      fact: factAt(facts, seq, 'run.ended'),
    });
  });

  it('finds each run’s run.ended in a session by runId', () => {
    const facts = loadSampleLog('compaction');
    expect(
      ['run_mmabopmo773d2f85b581', 'run_mmabqwy2ef0145a9cb46', 'run_mmabtqz6b82638a3597d'].map(
        (runId) => classifyTerminal(facts, { runId }),
      ),
    ).toStrictEqual([
      { kind: 'ended', fact: factAt(facts, 9, 'run.ended') },
      { kind: 'ended', fact: factAt(facts, 15, 'run.ended') },
      { kind: 'ended', fact: factAt(facts, 22, 'run.ended') },
    ]);
    expect(factAt(facts, 22, 'run.ended').status).toBe('completed');
  });

  it.each([
    ['text-only', ['run_mm8ypg3k6df1653c9d7f', 'run_mm8yqdb894d7deff2781'], [4, 8]],
    ['permission', ['run_mm93k8my604cb5581f3f', 'run_mm93lv2f6f9cd2595c15'], [10, 19]],
  ] as const)('finds both runs’ run.ended in %s', (name, runIds, seqs) => {
    const facts = loadSampleLog(name);
    expect(runIds.map((runId) => classifyTerminal(facts, { runId }))).toStrictEqual(
      seqs.map((seq) => ({ kind: 'ended', fact: factAt(facts, seq, 'run.ended') })),
    );
  });

  it('says missing for interrupted-tool, an empty log and a run not in the facts', () => {
    expect(classifyTerminal(loadSampleLog('interrupted-tool'))).toStrictEqual({ kind: 'missing' });
    expect(classifyTerminal([])).toStrictEqual({ kind: 'missing' });
    expect(classifyTerminal(loadSampleLog('text-only'), { runId: 'run_elsewhere' })).toStrictEqual({
      kind: 'missing',
    });
  });

  it('says damaged, with every run.ended in log order, when a run has several', () => {
    const log = logBuilder();
    log.startRun('go');
    const first = log.add(draft.ended('completed', 'end_turn'));
    const second = log.add(draft.ended('aborted', 'stop_requested'));
    expect(classifyTerminal(log.facts)).toStrictEqual({ kind: 'damaged', ended: [first, second] });
  });

  it('refuses a session’s facts without a runId, naming the runs and what to pass', () => {
    const facts = loadSampleLog('text-only');
    let caught: unknown;
    try {
      classifyTerminal(facts);
    } catch (error) {
      caught = error;
    }
    expect(ProjectionInputError.isInstance(caught)).toBe(true);
    expect(TurnlogError.isTurnlogError(caught)).toBe(true);
    expect(caught).toMatchObject({
      name: 'ProjectionInputError',
      projection: 'classifyTerminal',
      message:
        'classifyTerminal: the facts belong to 2 runs (run_mm8ypg3k6df1653c9d7f, run_mm8yqdb894d7deff2781); pass { runId } to say which run to classify',
    });
  });
});
