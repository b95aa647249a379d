import { describe, expect, it } from 'vitest';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { TurnEvent } from '../../machines/effects/turn-channel.ts';
import { InvalidArgumentError } from '../../runtime-errors.ts';
import { memoryStore } from '../../store/memory/memory-store.ts';
import { addTool, isFactOf, testRuntime, until } from './runtime-helpers.ts';

/** Every event of a handle, to its end. */
async function all(events: AsyncIterable<TurnEvent> | Iterable<TurnEvent>): Promise<TurnEvent[]> {
  const seen: TurnEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

describe('runtime.follow(sessionId)', () => {
  it('gives undefined for a session without an unfinished run, and refuses a bad id', async () => {
    const runtime = testRuntime(memoryStore(), { model: scriptedModel([{ text: 'Hi.' }]) });
    expect(await runtime.follow('none')).toBeUndefined();
    await (await runtime.send({ sessionId: 's', text: 'Hello' })).done;
    expect(await runtime.follow('s')).toBeUndefined();
    await expect(runtime.follow('')).rejects.toThrow(InvalidArgumentError);
    await runtime.close();
  });

  it('follows a parked run from the log: its facts so far, then the ones a decision brings, to run.ended', async () => {
    const add = addTool('ask');
    const runtime = testRuntime(memoryStore(), {
      model: scriptedModel([
        { toolCalls: [{ name: 'add', input: { a: 2, b: 3 } }] },
        { text: 'It is 5.' },
      ]),
      tools: { add: add.tool },
    });
    const turn = await runtime.send({ sessionId: 's', text: 'Add' });
    await until(turn, isFactOf('tool.permission.requested'));
    const followed = await runtime.follow('s');
    expect(followed?.runId).toBe(turn.runId);
    const events = all(followed?.events ?? []);
    const [pending] = await runtime.pending('s');
    await runtime.decide({ sessionId: 's', callId: pending?.callId ?? '', decision: 'allow' });
    expect(await followed?.done).toMatchObject({ status: 'completed', text: 'It is 5.' });
    const facts = (await events).filter((event) => 'seq' in event);
    expect(facts.map((fact) => fact.type)).toEqual(
      (await runtime.facts('s')).map((fact) => fact.type),
    );
    expect(add.executions).toEqual([{ a: 2, b: 3 }]);
    await runtime.close();
  });

  it('follows a live run: every fact from run.started, and the deltas from the moment it joins', async () => {
    const runtime = testRuntime(memoryStore(), {
      model: scriptedModel([{ text: ['Once ', 'upon ', 'a time'], stall: true }]),
    });
    const turn = await runtime.send({ sessionId: 's', text: 'A story' });
    await until(turn, isFactOf('step.started'));
    const followed = await runtime.follow('s');
    const events = all(followed?.events ?? []);
    await until(turn, (event) => event.type === 'text.delta' && event.text === 'a time');
    await runtime.stop({ sessionId: 's' });
    const seen = await events;
    expect(seen.filter((event) => 'seq' in event)).toEqual(await runtime.facts('s'));
    const deltas = seen.flatMap((event) => (event.type === 'text.delta' ? [event.text] : []));
    // The step's text from where the handle joined (deltas a reader lags behind may be folded).
    expect('Once upon a time'.endsWith(deltas.join(''))).toBe(true);
    expect(seen.at(-1)).toMatchObject({ type: 'run.ended', status: 'aborted' });
    await runtime.close();
  });

  it('lets a handle go mid-stream when its signal aborts: its events end, its done rejects, the others go on', async () => {
    const runtime = testRuntime(memoryStore(), {
      model: scriptedModel([{ text: ['Once ', 'upon ', 'a time'], stall: true }]),
    });
    const turn = await runtime.send({ sessionId: 's', text: 'A story' });
    await until(turn, isFactOf('step.started'));
    const controller = new AbortController();
    const left = await runtime.follow('s', { signal: controller.signal });
    const stays = await runtime.follow('s');
    const leftEvents = all(left?.events ?? []);
    const staysEvents = all(stays?.events ?? []);
    // Deltas the reader has not reached yet may come folded into one.
    await until(turn, (event) => event.type === 'text.delta' && event.text.endsWith('a time'));
    const reason = new Error('the page left');
    controller.abort(reason);
    await expect(left?.done).rejects.toBe(reason);
    const leftSeen = await leftEvents;
    await runtime.stop({ sessionId: 's' });
    expect(await stays?.done).toMatchObject({ status: 'aborted' });
    expect(await turn.done).toMatchObject({ status: 'aborted' });
    expect(leftSeen.some((event) => event.type === 'run.ended')).toBe(false);
    expect((await staysEvents).at(-1)).toMatchObject({ type: 'run.ended', status: 'aborted' });
    await runtime.close();
  });
});
