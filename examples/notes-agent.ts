// The agent behind examples/embedded-server.ts: a note keeper whose `saveNote` asks a person
// first, and whose `backUpNotes` takes a while (NOTES_BACKUP_MS, default 3000 ms): a process
// that dies while it runs leaves an indeterminate call for a person. Offline, its scripted
// model answers from the conversation it is sent, so it plays any number of sessions and turns.
import { z } from 'zod';
import { createRuntime, defineTool, type EventStore, type ScriptedResponse } from '../index.ts';
import { pickModel, type ScriptedCall } from './pick-model.ts';

/**
 * A runtime for the note keeper on `store`. Notes live in memory (a real app would use its
 * database); the conversation lives in the log.
 *
 * @example
 * const runtime = await createNotesRuntime(lowdbStore({ dir: '.turnlog/embedded-server' }));
 */
export async function createNotesRuntime(store: EventStore) {
  const notes = new Map<string, string>();
  const saveNote = defineTool({
    description: 'Save a note under a short title (asks the user first).',
    inputSchema: z.object({ title: z.string().min(1), text: z.string().min(1) }),
    permission: 'ask',
    execute: ({ title, text }) => {
      notes.set(title, text);
      return `Saved the note "${title}".`;
    },
  });
  const listNotes = defineTool({
    description: 'List the saved notes.',
    inputSchema: z.object({}),
    execute: () =>
      notes.size === 0
        ? 'No notes yet.'
        : [...notes].map(([title, text]) => `${title}: ${text}`).join('\n'),
  });
  const backUpNotes = defineTool({
    description: 'Back the notes up to the backup service (takes a few seconds).',
    inputSchema: z.object({}),
    execute: async (_input, { signal }) => {
      // Printed once `tool.started` is durable (execute runs only after it).
      console.log(`backing up ${notes.size} note(s)…`);
      const ms = Number(process.env.NOTES_BACKUP_MS ?? 3000);
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, ms);
        signal.addEventListener('abort', () => {
          clearTimeout(timer);
          reject(new Error('the backup was stopped'));
        });
      });
      return `Backed up ${notes.size} note(s).`;
    },
  });
  return createRuntime({
    model: await pickModel(notesReply),
    store,
    system:
      'You keep notes for the user. Save what they ask you to remember; list notes on request; back them up on request.',
    tools: { saveNote, listNotes, backUpNotes },
  });
}

/** The offline note keeper's next response, from the last message it is sent. */
export function notesReply(call: ScriptedCall): ScriptedResponse {
  const last = call.prompt.at(-1);
  if (last?.role === 'tool') {
    const part = last.content[0];
    const output = part?.type === 'tool-result' ? part.output : undefined;
    const text = output?.type === 'text' || output?.type === 'error-text' ? output.value : '';
    if (text.startsWith('Saved')) return { text: ['Done. ', text] };
    if (part?.type === 'tool-result' && part.toolName === 'listNotes') {
      return { text: ['Your notes:\n', text] };
    }
    if (part?.type === 'tool-result' && part.toolName === 'backUpNotes') {
      return text.startsWith('Backed up')
        ? { text: text }
        : { text: "I can't tell whether the backup finished; ask me to back up again to be sure." };
    }
    return { text: 'All right, I did not save it.' };
  }
  const request =
    last?.role === 'user'
      ? last.content.map((part) => (part.type === 'text' ? part.text : '')).join('')
      : '';
  if (/\bback ?up\b/i.test(request)) {
    return { text: 'Backing up your notes.', toolCalls: [{ name: 'backUpNotes', input: {} }] };
  }
  if (/\bnotes\b/i.test(request) && !/remember/i.test(request)) {
    return { text: 'Let me look.', toolCalls: [{ name: 'listNotes', input: {} }] };
  }
  const text = request.replace(/^(please )?remember( that)?\s*/i, '').trim() || request;
  const title = text.length <= 40 ? text : `${text.slice(0, 39)}…`;
  return {
    text: ['I will save that ', 'as a note.'],
    toolCalls: [{ name: 'saveNote', input: { title, text } }],
  };
}
