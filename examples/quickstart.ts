// The smallest useful turnlog agent: one tool, one turn, the answer streamed as it arrives,
// then the durable log it left. Run: npm start (or npx node examples/quickstart.ts).
// Offline with a scripted model unless OPENAI_API_KEY is set.
// The log goes to .turnlog/ (set TURNLOG_DIR to put it elsewhere).
import { z } from 'zod';
import { createRuntime, defineTool, lowdbStore, scriptedModel } from '../index.ts';

const getWeather = defineTool({
  description: 'The current weather in a city.',
  inputSchema: z.object({ city: z.string() }),
  execute: ({ city }) => `${city}: 18 °C, sunny, light wind`,
});
// Offline, a scripted model streams what a model would. With OPENAI_API_KEY set (and
// `npm install @ai-sdk/openai`), a real model answers.
const model = process.env.OPENAI_API_KEY
  ? (await import('@ai-sdk/openai')).openai('gpt-4.1-mini')
  : scriptedModel([
      { text: 'Let me check.', toolCalls: [{ name: 'getWeather', input: { city: 'Paris' } }] },
      { text: ['It is 18 °C and sunny ', 'in Paris: a good day for a walk.'] },
    ]);
const store = lowdbStore({ dir: process.env.TURNLOG_DIR ?? '.turnlog' });
const runtime = createRuntime({ model, tools: { getWeather }, store });

const text = 'What is the weather in Paris?';
console.log(`you: ${text}`);
const turn = await runtime.send({ sessionId: `quickstart-${Date.now()}`, text });
for await (const event of turn.events) {
  if (event.type === 'text.delta') process.stdout.write(event.text);
  if (event.type === 'tool.started') console.log('\n→', event.name, JSON.stringify(event.input));
  if (event.type === 'tool.settled') console.log(`← ${event.text}`);
}
const { status, reason, steps } = await turn.done;
console.log(`\n${status} (${reason}) in ${steps} steps. The log:`);
for (const fact of await runtime.facts(turn.sessionId)) {
  console.log(`${String(fact.seq).padStart(3)}  ${fact.type.padEnd(26)}${fact.state}`);
}
await runtime.close();
