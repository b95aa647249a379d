import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Fact, TransientEvent } from '../../../events/facts.ts';
import {
  createTurnChannel,
  mergedDelta,
  type TurnEvent,
  type TurnHandle,
  type TurnSink,
} from '../../../machines/effects/turn-channel.ts';

const ids = { sessionId: 's1', turnId: 't1', runId: 'r1' };

/** A fact as the handle carries it (only `type` and `seq` matter to the channel). */
const fact = (type: string, seq: number) =>
  ({ ...ids, type, seq, id: `f${seq}` }) as unknown as Fact;
const text = (stepId: string, chunk: string): TransientEvent => ({
  type: 'text.delta',
  sessionId: 's1',
  runId: 'r1',
  stepId,
  text: chunk,
});
const input = (callId: string, chunk: string): TransientEvent => ({
  type: 'tool.input.delta',
  sessionId: 's1',
  runId: 'r1',
  stepId: 'step1',
  callId,
  name: 'saveNote',
  delta: chunk,
});

const result = {
  status: 'completed' as const,
  reason: 'completed' as never,
  text: '',
  usage: { inputTokens: undefined, outputTokens: undefined } as never,
  steps: 1,
};

/** Everything a fresh iterator of the handle replays. */
async function replay(handle: TurnHandle): Promise<TurnEvent[]> {
  const events: TurnEvent[] = [];
  for await (const event of handle.events) events.push(event);
  return events;
}

/** The text of each stream, in order, as a reader saw it: `text:step1`, `input:call_1`. */
function streams(events: readonly TurnEvent[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const event of events) {
    if (event.type === 'text.delta')
      out[`text:${event.stepId}`] = (out[`text:${event.stepId}`] ?? '') + event.text;
    if (event.type === 'tool.input.delta')
      out[`input:${event.callId}`] = (out[`input:${event.callId}`] ?? '') + event.delta;
  }
  return out;
}

const kinds = (events: readonly TurnEvent[]) => events.map((event) => event.type);

/** A 3.9 MB message as 243,750 deltas of 16 characters, as the probe streamed it. */
const deltaCount = 243_750;
const chunkOf = (index: number) => `${String(index).padStart(8, '0')}-chunk-;`;

function streamMessage(sink: TurnSink, onDelta: (index: number) => void = () => {}) {
  sink.push(fact('run.started', 1));
  sink.push(fact('step.started', 2));
  for (let index = 0; index < deltaCount; index += 1) {
    sink.push(text('step1', chunkOf(index)));
    onDelta(index);
  }
  sink.push(fact('step.completed', 3));
  sink.push(fact('run.ended', 4));
  sink.end(result);
}

describe('a live handle keeps a bounded replay (issue 29 item 5)', () => {
  it('replays a 3.9 MB message streamed as 243,750 deltas as 5 items: its 4 facts and one delta', async () => {
    const { handle, sink } = createTurnChannel(ids);
    streamMessage(sink);
    const events = await replay(handle);
    expect(kinds(events)).toEqual([
      'run.started',
      'step.started',
      'text.delta',
      'step.completed',
      'run.ended',
    ]);
    const message = Array.from({ length: deltaCount }, (_, index) => chunkOf(index)).join('');
    expect(message.length).toBe(3_900_000);
    expect(streams(events)).toEqual({ 'text:step1': message });
  });

  it('gives a caught-up reader every delta as it came, and still replays 5 items after', async () => {
    const { handle, sink } = createTurnChannel(ids);
    const live = handle.events[Symbol.asyncIterator]();
    const seen: TurnEvent[] = [];
    sink.push(fact('run.started', 1));
    sink.push(fact('step.started', 2));
    for (let index = 0; index < 20_000; index += 1) {
      sink.push(text('step1', chunkOf(index)));
      // The reader takes what is there before the next delta arrives (it is caught up).
      for (let next = await live.next(); ; next = await live.next()) {
        seen.push(next.value as TurnEvent);
        if (next.value?.type === 'text.delta') break;
      }
    }
    sink.push(fact('run.ended', 3));
    sink.end(result);
    for (let next = await live.next(); !next.done; next = await live.next()) seen.push(next.value);
    expect(seen).toHaveLength(20_003);
    expect(seen.filter((event) => event.type === 'text.delta')).toHaveLength(20_000);
    expect(kinds(await replay(handle))).toEqual([
      'run.started',
      'step.started',
      'text.delta',
      'run.ended',
    ]);
    expect(streams(await replay(handle))).toEqual(streams(seen));
  });

  it('holds one more item per reader that stopped midway and never returned', async () => {
    const { handle, sink } = createTurnChannel(ids);
    const stuck: AsyncIterator<TurnEvent>[] = [];
    streamMessage(sink, (index) => {
      // Three readers read up to the delta just pushed, then are dropped without return().
      if (index === 1_000 || index === 50_000 || index === 200_000) {
        const reader = handle.events[Symbol.asyncIterator]();
        stuck.push(reader);
        void (async () => {
          for (let read = 0; read < 3; read += 1) await reader.next();
        })();
      }
    });
    await Promise.resolve();
    const events = await replay(handle);
    expect(events.length).toBeLessThanOrEqual(5 + stuck.length);
    expect(streams(events)['text:step1']?.length).toBe(3_900_000);
  });

  it('folds only deltas of one stream: other steps, other calls and facts stay apart', async () => {
    const { handle, sink } = createTurnChannel(ids);
    for (const event of [
      text('step1', 'a'),
      text('step1', 'b'),
      input('call_1', '{"ti'),
      input('call_1', 'tle":1}'),
      input('call_2', '{}'),
      text('step1', 'c'),
      fact('step.completed', 1),
      text('step2', 'd'),
      text('step2', 'e'),
    ]) {
      sink.push(event);
    }
    sink.end(result);
    const events = await replay(handle);
    expect(events).toEqual([
      text('step1', 'ab'),
      input('call_1', '{"title":1}'),
      input('call_2', '{}'),
      text('step1', 'c'),
      fact('step.completed', 1),
      text('step2', 'de'),
    ]);
    expect(mergedDelta(text('step1', 'a'), { ...text('step1', 'b'), runId: 'r2' })).toBeUndefined();
  });

  it('gives every reader, whenever it starts and however fast it reads, each stream whole and the facts in order', async () => {
    const event = fc.oneof(
      fc.record({
        kind: fc.constant('text' as const),
        step: fc.constantFrom('s1', 's2'),
        chunk: fc.string({ maxLength: 3 }),
      }),
      fc.record({
        kind: fc.constant('input' as const),
        step: fc.constantFrom('c1', 'c2'),
        chunk: fc.string({ maxLength: 3 }),
      }),
      fc.record({
        kind: fc.constant('fact' as const),
        step: fc.constant(''),
        chunk: fc.constant(''),
      }),
    );
    // Each action: push an event, start a reader, or let reader n read k events.
    const action = fc.oneof(
      event.map((pushed) => ({ push: pushed })),
      fc.constant({ start: true as const }),
      fc.record({ read: fc.nat(4), count: fc.integer({ min: 1, max: 4 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(action, { maxLength: 60 }), async (actions) => {
        const { handle, sink } = createTurnChannel(ids);
        const pushed: TurnEvent[] = [];
        const readers: {
          iterator: AsyncIterator<TurnEvent>;
          seen: TurnEvent[];
          pending?: Promise<void> | undefined;
          ready?: IteratorResult<TurnEvent> | undefined;
        }[] = [];
        let seq = 0;
        for (const step of actions) {
          if ('push' in step) {
            const { kind, step: key, chunk } = step.push;
            const made =
              kind === 'text'
                ? text(key, chunk)
                : kind === 'input'
                  ? input(key, chunk)
                  : fact('tool.settled', ++seq);
            pushed.push(made);
            sink.push(made);
          } else if ('start' in step) {
            readers.push({ iterator: handle.events[Symbol.asyncIterator](), seen: [] });
          } else {
            const reader = readers[step.read % Math.max(readers.length, 1)];
            if (reader === undefined) continue;
            for (let read = 0; read < step.count; read += 1) {
              // A read of what is there; one past the end stays pending until the next push.
              reader.pending ??= reader.iterator.next().then((next) => {
                reader.ready = next;
              });
              await new Promise((resolve) => setImmediate(resolve));
              if (reader.ready === undefined) break;
              if (!reader.ready.done) reader.seen.push(reader.ready.value);
              reader.pending = undefined;
              reader.ready = undefined;
            }
          }
        }
        sink.end(result);
        for (const reader of readers) {
          await reader.pending;
          if (reader.ready !== undefined && !reader.ready.done)
            reader.seen.push(reader.ready.value);
          for (
            let next = await reader.iterator.next();
            !next.done;
            next = await reader.iterator.next()
          ) {
            reader.seen.push(next.value);
          }
          const facts = (events: readonly TurnEvent[]) => events.filter((one) => 'seq' in one);
          expect(facts(reader.seen)).toEqual(facts(pushed));
          expect(streams(reader.seen)).toEqual(streams(pushed));
        }
        const replayed = await replay(handle);
        expect(streams(replayed)).toEqual(streams(pushed));
        expect(replayed.filter((one) => 'seq' in one)).toEqual(
          pushed.filter((one) => 'seq' in one),
        );
      }),
      { numRuns: 300 },
    );
  });
});
