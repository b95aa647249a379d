import { describe, expect, it } from 'vitest';
import type { Fact } from '../../../events/facts.ts';
import { RunHandles, RunSinks } from '../../../machines/effects/run-handles.ts';
import type { TurnEvent, TurnResult, TurnSink } from '../../../machines/effects/turn-channel.ts';

const ids = { sessionId: 's', turnId: 't', runId: 'r' };
const fact = (seq: number) => ({ seq, runId: 'r', type: 'step.started' }) as unknown as Fact;
const result: TurnResult = {
  status: 'completed',
  reason: 'stop' as TurnResult['reason'],
  text: '',
  usage: {} as TurnResult['usage'],
  steps: 0,
};

/** A sink that records what it takes, named. */
function recording(name: string, log: string[]): TurnSink {
  return {
    push: (event: TurnEvent) => void log.push(`${name}:${'seq' in event ? event.seq : '-'}`),
    end: () => void log.push(`${name}:end`),
    fail: () => void log.push(`${name}:fail`),
    letGo: () => void log.push(`${name}:let go`),
  };
}

describe('RunSinks.remove', () => {
  it('keeps the head object when the head is removed: it takes the next node, then nobody', () => {
    const log: string[] = [];
    const [a, b, c] = ['a', 'b', 'c'].map((name) => recording(name, log)) as [
      TurnSink,
      TurnSink,
      TurnSink,
    ];
    const head = new RunSinks(a, []);
    head.add(b, []);
    head.add(c, []);
    expect(head.size).toBe(3);
    expect(head.remove(a)).toBe(true);
    expect(head.remove(a)).toBe(false);
    head.push(fact(1));
    expect(log.sort()).toEqual(['b:1', 'c:1']);
    log.length = 0;
    expect(head.remove(b)).toBe(true);
    expect(head.remove(c)).toBe(true);
    expect([head.size, head.empty]).toEqual([0, true]);
    // Still the list a driver feeds: a handle added later takes what comes.
    head.add(recording('later', log), []);
    expect([head.size, head.empty]).toEqual([1, false]);
    head.push(fact(2));
    head.end(result);
    expect(log).toEqual(['later:2', 'later:end']);
  });

  it('leaves the only node with a sink that takes nothing, and reports the run emptied', () => {
    const emptied: string[] = [];
    const handles = new RunHandles((run) => emptied.push(run.runId));
    const controller = new AbortController();
    handles.newHandle(ids, [], controller.signal);
    const head = handles.sinksOf('r');
    controller.abort();
    expect(emptied).toEqual(['r']);
    expect(head?.size).toBe(0);
    expect(head?.empty).toBe(true);
    expect(head?.push(fact(1))).toBe(true);
    // The run is still in the map (its owner decides: `LiveRuns` discards a run not driven here).
    expect(handles.sinksOf('r')).toBe(head);
  });
});
