import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from '../../adapters/scripted-model.ts';
import type { TurnlogUIMessage } from '../../adapters/ui/ui-message-types.ts';
import { sequentialIds } from '../../events/ids.ts';
import { chatHandler } from '../../http/chat-handler.ts';
import { createRuntime, type Runtime } from '../../runtime.ts';
import { defineTool } from '../../tools/define-tool.ts';
import { asSent, readResponseLikeUseChat } from '../adapters/ui/ui-stream-reader.ts';
import { testSchema } from '../helpers/postgres.ts';
import { deferred } from '../runtime/runtime-helpers.ts';

/** Any worker continues where another left: the model is a function of the prompt. */
function workerModel() {
  const step = (call: LanguageModelV4CallOptions) =>
    call.prompt.some((message) => message.role === 'tool')
      ? { text: 'All done.' }
      : { text: 'Working.', toolCalls: [{ id: 'call_w', name: 'work', input: { job: 'j1' } }] };
  return scriptedModel(Array.from({ length: 20 }, () => step));
}

const user: TurnlogUIMessage = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'go' }] };
const post = (body: Record<string, unknown>) =>
  new Request('http://127.0.0.1:3000/api/chat', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ trigger: 'submit-message', ...body }),
  });
const get = (path: string) => new Request(`http://127.0.0.1:3000${path}`);
const onLoopback = { clientAddress: () => '127.0.0.1' };

describe('chatHandler on workers sharing one postgresStore', () => {
  let database: ReturnType<typeof testSchema>;
  const runtimes: Runtime[] = [];
  const executions: string[] = [];
  let gate = deferred();

  const work = (permission: 'allow' | 'ask') =>
    defineTool({
      description: 'Does a job.',
      inputSchema: z.object({ job: z.string() }),
      permission,
      execute: async ({ job }) => {
        executions.push(job);
        await gate.promise;
        return `${job} done`;
      },
    });

  function worker(id: string, permission: 'allow' | 'ask') {
    const ids = sequentialIds();
    const runtime = createRuntime({
      model: workerModel(),
      tools: { work: work(permission) },
      store: database.open(),
      generateId: (prefix) => `${ids(prefix)}_${id}`,
      worker: { id, leaseMs: 60_000 },
    });
    runtimes.push(runtime);
    return runtime;
  }

  beforeEach(() => {
    database = testSchema('chat_handler');
    executions.length = 0;
    gate = deferred();
  });
  afterEach(async () => {
    gate.resolve();
    await Promise.all(runtimes.splice(0).map((runtime) => runtime.close().catch(() => {})));
    await database.drop();
  });

  it('resumes a run driven by another worker from the log, then follows it live to its end', async () => {
    const a = chatHandler(worker('a', 'allow'), onLoopback);
    const b = chatHandler(worker('b', 'allow'), onLoopback);
    const started = await a(post({ id: 's1', messages: [user] }));
    const onA = readResponseLikeUseChat(started);
    // Two pages on worker b reconnect while a runs the tool: each gets the run from the log.
    const first = readResponseLikeUseChat(await b(get('/api/chat/s1/stream')));
    const second = readResponseLikeUseChat(await b(get('/api/chat/s1/stream')));
    gate.resolve();
    const [fromA, fromB, fromBAgain] = await Promise.all([onA, first, second]);
    expect(fromA.message?.metadata).toMatchObject({ status: 'completed' });
    expect(fromB.message).toEqual(fromA.message);
    expect(fromBAgain.message).toEqual(fromA.message);
    expect(executions).toEqual(['j1']);
  });

  it('takes an approval on another worker than the one that asked, and streams the rest', async () => {
    const a = chatHandler(worker('a', 'ask'), onLoopback);
    const b = chatHandler(worker('b', 'ask'), onLoopback);
    gate.resolve();
    const parked = (await readResponseLikeUseChat(await a(post({ id: 's2', messages: [user] }))))
      .message as TurnlogUIMessage;
    expect(parked.metadata).toMatchObject({ status: 'awaiting' });
    const approved = asSent({
      ...parked,
      parts: parked.parts.map((part) =>
        'approval' in part && part.state === 'approval-requested'
          ? { ...part, state: 'approval-responded', approval: { ...part.approval, approved: true } }
          : part,
      ),
    }) as TurnlogUIMessage;
    const answer = await b(post({ id: 's2', messages: [user, approved] }));
    const done = (await readResponseLikeUseChat(answer, approved)).message;
    expect(done?.metadata).toMatchObject({ status: 'completed' });
    expect(done?.parts.find((part) => part.type === 'tool-work')).toMatchObject({
      state: 'output-available',
      output: 'j1 done',
    });
    expect(executions).toEqual(['j1']);
  });
});
