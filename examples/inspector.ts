// The quickstart's turn, with the turn machine streamed to the Stately inspector.
//
// Run: npx node examples/inspector.ts
// It starts the inspector's local relay on port 8080 (INSPECT_PORT to change it; nothing is
// opened for you). To watch: open http://localhost:8080 in a browser; that page embeds the
// Stately inspector (https://stately.ai/inspect) and feeds it from ws://localhost:8080. In a
// terminal the example waits for Enter before the turn and before exiting, so you can look;
// with stdin not a terminal it runs straight through and exits.
// Offline with a scripted model unless OPENAI_API_KEY or GOOGLE_GENERATIVE_AI_API_KEY is set;
// the log goes to .turnlog/inspector/ (under TURNLOG_DIR if set).
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import { createWebSocketInspector } from '@statelyai/inspect';
import { createInspectorServer } from '@statelyai/inspect/server';
import { z } from 'zod';
import { createRuntime, defineTool, lowdbStore } from '../index.ts';
import { pickModel } from './pick-model.ts';

const port = Number(process.env.INSPECT_PORT ?? 8080);
const interactive = process.stdin.isTTY === true;

const relay = createInspectorServer({ port, autoOpen: false });
// A second client of the relay counts what reaches it, so we close only once everything has.
const watcher = await watchRelay(`ws://localhost:${port}`);
let sent = 0;
const inspector = createWebSocketInspector({
  url: `ws://localhost:${port}`,
  filter: () => {
    sent += 1;
    return true;
  },
});
console.log(
  `inspector: open http://localhost:${port} to watch (the Stately inspector from https://stately.ai/inspect: it needs the internet; offline, use the log viewer of npm run web)`,
);
if (interactive) await pressEnter('Press Enter to run the turn.');

const getWeather = defineTool({
  description: 'The current weather in a city.',
  inputSchema: z.object({ city: z.string() }),
  execute: ({ city }) => `${city}: 18 °C, sunny, light wind`,
});
const model = await pickModel([
  { text: 'Let me check.', toolCalls: [{ name: 'getWeather', input: { city: 'Paris' } }] },
  { text: ['It is 18 °C and sunny ', 'in Paris: a good day for a walk.'] },
]);
const store = lowdbStore({ dir: path.join(process.env.TURNLOG_DIR ?? '.turnlog', 'inspector') });
const runtime = createRuntime({ model, tools: { getWeather }, store, inspect: inspector.inspect });

const turn = await runtime.send({
  sessionId: `inspector-${Date.now()}`,
  text: 'What is the weather in Paris?',
});
for await (const event of turn.events) {
  if ('seq' in event)
    console.log(`${String(event.seq).padStart(3)}  ${event.type.padEnd(26)}→ ${event.state}`);
}
const { status, text } = await turn.done;
console.log(`${status}: ${text}`);
await runtime.close();

// The inspector hands events on from a timer; let those run, then wait for the relay to pass
// every one on before closing the socket.
await new Promise((resolve) => setTimeout(resolve, 0));
await watcher.received(sent);
console.log(`inspector: ${sent} inspection events sent through ws://localhost:${port}`);
console.log(`inspector: the turn machine went ${watcher.states.join(' → ')}`);
if (interactive) await pressEnter('Press Enter to exit.');
inspector.stop();
watcher.close();
relay.stop();
// A browser tab still connected to the relay would keep the process alive.
if (interactive) process.exit(0);

/** Connects to the relay; counts the messages it passes on and the machine states they show. */
async function watchRelay(url: string) {
  const socket = new WebSocket(url);
  let count = 0;
  const states: string[] = [];
  let waiting: { count: number; resolve: () => void } | undefined;
  socket.addEventListener('message', (message) => {
    count += 1;
    const event = JSON.parse(String(message.data));
    const value = event.type === '@xstate.snapshot' ? event.snapshot?.value : undefined;
    const state = value === undefined ? undefined : statePath(value);
    if (state !== undefined && state !== states.at(-1)) states.push(state);
    if (waiting !== undefined && count >= waiting.count) waiting.resolve();
  });
  await new Promise((resolve, reject) => {
    socket.addEventListener('open', resolve, { once: true });
    socket.addEventListener('error', () => reject(new Error(`cannot reach the relay at ${url}`)), {
      once: true,
    });
  });
  return {
    states,
    received: (expected: number) =>
      new Promise<void>((resolve) => {
        if (count >= expected) return resolve();
        waiting = { count: expected, resolve };
      }),
    close: () => socket.close(),
  };
}

/** `{ requesting: 'streaming' }` → `requesting.streaming`. */
function statePath(value: unknown): string {
  if (typeof value !== 'object' || value === null) return String(value);
  const [key, child] = Object.entries(value)[0] ?? ['', ''];
  return `${key}.${statePath(child)}`;
}

async function pressEnter(question: string) {
  const reader = createInterface({ input: process.stdin, output: process.stdout });
  await reader.question(`${question} `);
  reader.close();
}
