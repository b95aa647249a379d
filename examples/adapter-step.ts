// One provider step at a time through the model adapter, offline: a scripted model asks for a
// tool, the guard proves the call, we answer it, and the model replies.
// Run with: npx node examples/adapter-step.ts
// (In an app: import { aiSdkAdapter, scriptedModel } from 'turnlog'; any AI SDK model works.)
import { aiSdkAdapter } from '../adapters/ai-sdk-adapter.ts';
import type { ModelMessage, ModelToolDefinition } from '../adapters/model-adapter.ts';
import { scriptedModel } from '../adapters/scripted-model.ts';

const model = scriptedModel([
  {
    reasoning: { text: 'I should read the file first.', signature: 'sig-1' },
    toolCalls: [{ name: 'readFile', input: { path: 'notes.md' } }],
    usage: { inputTokens: 40, outputTokens: 12 },
  },
  { text: ['notes.md says: ', 'buy milk.'], usage: { inputTokens: 60, outputTokens: 6 } },
]);
const adapter = aiSdkAdapter(model);

const tools: ModelToolDefinition[] = [
  {
    name: 'readFile',
    description: 'Reads a UTF-8 text file from the workspace.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
];
const messages: ModelMessage[] = [{ role: 'user', content: 'What does notes.md say?' }];

// Step 1: the model asks for a tool. The adapter never runs it; it only proves the call.
const first = adapter.step({ messages, tools, abortSignal: AbortSignal.timeout(10_000) });
console.log('sending', JSON.stringify(first.request));
for await (const event of first.events) console.log('  event', JSON.stringify(event));
const completion = await first.completion;
if (completion.type === 'step.failed') throw new Error(completion.error.message);
console.log(
  'finish',
  JSON.stringify(completion.finishReason),
  'usage',
  JSON.stringify(completion.usage),
);

const assistant: ModelMessage = { role: 'assistant', content: [...completion.content] };
const results: ModelMessage = { role: 'tool', content: [] };
for (const call of completion.toolCalls) {
  console.log(
    'call',
    call.name,
    call.input,
    call.proof === null ? call.withheld : `proof: ${call.proof}`,
  );
  assistant.content.push({
    type: 'tool-call',
    callId: call.callId,
    name: call.name,
    input: call.input,
  });
  // A real app runs proven calls through the tool runtime; here the file's text is inlined.
  results.content.push({
    type: 'tool-result',
    callId: call.callId,
    name: call.name,
    text: call.proof === null ? (call.withheld ?? 'Not run.') : 'buy milk',
    isError: call.proof === null,
  });
}

// Step 2: the history, including the signed reasoning, goes back to the model.
const second = adapter.step({
  messages: [...messages, assistant, results],
  tools,
  abortSignal: AbortSignal.timeout(10_000),
});
let reply = '';
for await (const event of second.events) if (event.type === 'text.delta') reply += event.text;
console.log('reply', reply);
console.log('second step ended with', (await second.completion).type);
