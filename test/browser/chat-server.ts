// The server of the browser test of chatHandler, as a program the test can SIGKILL: a runtime on
// a lowdbStore in DIR with a scripted model, `chatHandler` at /api/chat, and the AI SDK's own
// streamText route at /sdk/api/chat with the same model and tools, for the comparison. Serves
// the page bundled at PAGE. Prints "listening on <url>" once it listens on PORT.
//
// Run: DIR=… PAGE=…/page.js PORT=0 node test/browser/chat-server.ts
import { appendFileSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import path from 'node:path';
import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { convertToModelMessages, isStepCount, streamText, tool, type UIMessage } from 'ai';
import { z } from 'zod';
import {
  chatHandler,
  createNodeHandler,
  createRuntime,
  defineTool,
  listenTrusted,
  lowdbStore,
  RequestGuard,
  type ScriptedResponse,
  scriptedModel,
} from '../../index.ts';

const dir = process.env.DIR ?? '.turnlog/chat-browser';
const page = process.env.PAGE ?? '';

/** The model of both routes: a function of the prompt, so a restarted server goes on. */
export function chatStep(call: LanguageModelV4CallOptions, request: number): ScriptedResponse {
  const last = call.prompt.at(-1);
  const id = `call_${call.prompt.length}`;
  if (last?.role === 'tool') {
    const result = last.content.find((part) => part.type === 'tool-result');
    const output = JSON.stringify(result?.type === 'tool-result' ? result.output : '');
    switch (result?.type === 'tool-result' ? result.toolName : '') {
      case 'lookUp':
        return { text: 'It is sunny in Paris.' };
      case 'saveNote':
        return { text: output.includes('denied') ? 'Understood, not saved.' : 'Saved the note.' };
      default:
        return {
          text: output.includes('unknown')
            ? 'I cannot tell whether the backup ran; check it before running it again.'
            : 'Backed up.',
        };
    }
  }
  const content = last?.role === 'user' ? last.content : [];
  const text = content.map((part) => (part.type === 'text' ? part.text : '')).join(' ');
  const images = content.filter((part) => part.type === 'file');
  if (images.length > 0) {
    return { text: `I see ${images.length} image (${images.map((part) => part.mediaType)}).` };
  }
  if (/weather/i.test(text)) {
    return { text: 'Let me look.', toolCalls: [{ id, name: 'lookUp', input: { city: 'Paris' } }] };
  }
  const remember = /remember (.*)/i.exec(text);
  if (remember !== null) {
    return { toolCalls: [{ id, name: 'saveNote', input: { text: remember[1] ?? '' } }] };
  }
  if (/back up/i.test(text)) return { toolCalls: [{ id, name: 'backUp', input: {} }] };
  if (/story/i.test(text)) return { text: ['Once upon a time, ', 'there was a log'], stall: true };
  return { text: `Answer number ${request + 1}.` };
}

const lookUp = {
  description: 'The weather in a city.',
  inputSchema: z.object({ city: z.string() }),
  execute: ({ city }: { city: string }) => `${city}: sunny, 21 °C`,
};
const saveNote = {
  description: 'Saves a note.',
  inputSchema: z.object({ text: z.string() }),
  execute: ({ text }: { text: string }) => `Saved: ${text}`,
};

const runtime = createRuntime({
  model: scriptedModel((call, request) => chatStep(call, request)),
  store: lowdbStore({ dir }),
  tools: {
    lookUp: defineTool(lookUp),
    saveNote: defineTool({ ...saveNote, permission: 'ask' }),
    backUp: defineTool({
      description: 'Backs everything up; takes a while.',
      inputSchema: z.object({}),
      execute: async (_input, { signal }) => {
        appendFileSync(path.join(dir, 'backups.log'), `${process.pid}\n`);
        await new Promise((_, reject) => signal.addEventListener('abort', reject));
        return 'done';
      },
    }),
  },
});
await runtime.recover();

/** The AI SDK's own route: streamText with the same model and tools (saveNote needs approval). */
async function streamTextRoute(request: Request): Promise<Response> {
  const { messages } = (await request.json()) as { messages: UIMessage[] };
  const result = streamText({
    model: scriptedModel((call, index) => chatStep(call, index)),
    messages: await convertToModelMessages(messages),
    tools: {
      lookUp: tool(lookUp),
      saveNote: tool({ ...saveNote, needsApproval: true }),
    },
    stopWhen: isStepCount(5),
  });
  return result.toUIMessageStreamResponse({ originalMessages: messages });
}

const guard = new RequestGuard({ maxBodyBytes: 8 * 1024 * 1024 });
const chat = chatHandler(runtime, { guard });
const html =
  '<!doctype html><meta charset="utf-8"><title>chat</title><div id="root"></div><script type="module" src="/page.js"></script>';

async function route(request: Request): Promise<Response> {
  const { pathname } = new URL(request.url);
  if (pathname.startsWith('/api/chat')) return chat(request);
  if (pathname === '/sdk/api/chat') {
    await guard.check(request, { name: 'sdk.chat', kind: 'act' });
    return streamTextRoute(request);
  }
  if (pathname === '/page.js') {
    return new Response(readFileSync(page), { headers: { 'content-type': 'text/javascript' } });
  }
  return new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8' } });
}

const server = createServer(createNodeHandler(route));
const { url } = await listenTrusted(server, { guard, port: Number(process.env.PORT ?? 0) });
console.log(`listening on ${url}`);
